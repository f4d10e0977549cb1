/**
 * The global flags every command takes, and the files and options they resolve to, without
 * opening anything. Apart from open-store.ts so that `serve` can use them without loading the
 * client, direct mode and PostgreSQL code it never runs (an idle daemon's heap is its modules).
 */
import type { Command } from "commander";
import type { DatabaseFiles } from "../database-files.js";
import { refuseTilde } from "../hermes-home.js";
import { resolveOptions, type ResolvedOptions } from "../options.js";
import type { OpenOptions } from "../session-db.js";

/** The options every command takes. */
export interface GlobalOptions {
  db?: string;
  direct?: boolean;
  json?: boolean;
}

export function globalsOf(command: Command): GlobalOptions {
  return command.optsWithGlobals<GlobalOptions>();
}

/**
 * The library's options for the global flags: `--db` (else the default of SPEC §2) and `--direct`.
 * A `--db` beginning with `~` (quoted, so the shell left it) is refused, as in `$HERMES_HOME`.
 */
export function openOptions(globals: GlobalOptions, options: OpenOptions = {}): OpenOptions {
  if (globals.db !== undefined) refuseTilde("--db", globals.db);
  return { ...(globals.db !== undefined ? { path: globals.db } : {}), mode: globals.direct ? "direct" : "auto", ...options };
}

/** The options for the global flags as the library resolves them (the engine, the files), without opening anything. */
export function resolvedOf(globals: GlobalOptions): ResolvedOptions {
  return resolveOptions(openOptions(globals));
}

/** The database's files for the global flags, as the library resolves them, without opening anything. */
export function filesOf(globals: GlobalOptions): DatabaseFiles {
  return resolvedOf(globals).files;
}

/**
 * Where `backup`, `check` and `optimize` run: through the daemon that serves the file (its writer
 * and readers do the work between batches), else on the file in this process (`--direct` too).
 */
import { existsSync } from "node:fs";
import type { Command } from "commander";
import { CliError } from "./cli-error.js";
import { checkDatabaseFile } from "./database-file.js";
import { connectDaemon, globalsOf, resolvedOf, type DaemonStore } from "./open-store.js";
import { Output } from "./output.js";

/** A request's time limit for these commands: a big file's check or copy takes minutes, not seconds. */
const MAINTENANCE_TIMEOUT_MS = 24 * 3600 * 1000;

export interface MaintenanceTarget {
  /** The database's real path, or a PostgreSQL URL without its password. */
  readonly path: string;
  readonly postgres: boolean;
  /** The daemon serving the file; null: this process opens it. */
  readonly daemon: DaemonStore | null;
  readonly out: Output;
}

/** Runs `body` on the command's database; the daemon's connection is closed whatever happens. */
export async function withMaintenanceTarget(command: Command, body: (target: MaintenanceTarget) => Promise<void>): Promise<void> {
  const globals = globalsOf(command);
  const out = new Output(globals.json === true);
  const { engine, files } = resolvedOf(globals);
  const path = files.db;
  if (engine === "postgres") {
    await body({ path, postgres: true, daemon: null, out });
    return;
  }
  if (!existsSync(path)) throw new CliError("NOT_FOUND", `no database at ${path} (nothing was created); give --db PATH or set $SESSIONDB_PATH`);
  checkDatabaseFile(path);
  const daemon = globals.direct ? null : await connectDaemon(globals, { requestTimeoutMs: MAINTENANCE_TIMEOUT_MS });
  try {
    await body({ path, postgres: false, daemon, out });
  } finally {
    await daemon?.db.close();
  }
}

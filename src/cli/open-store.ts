/**
 * Which path a command takes: the daemon when one answers for the file (unless `--direct`), else
 * the file opened in this process. Commands that only read never create a missing file.
 */
import { existsSync } from "node:fs";
import type { Command } from "commander";
import { DaemonClient } from "../client/daemon-client.js";
import { toSessionDBError } from "../errors.js";
import { openSessionDB } from "../open.js";
import type { SessionDB } from "../session-db.js";
import { isPostgresUrl } from "../pg/pg-url.js";
import { defaultDatabasePath, realDatabasePath } from "../socket-path.js";
import { CliError } from "./cli-error.js";
import { Output } from "./output.js";

/** The options every command takes. */
export interface GlobalOptions {
  db?: string;
  direct?: boolean;
  json?: boolean;
}

export function globalsOf(command: Command): GlobalOptions {
  return command.optsWithGlobals<GlobalOptions>();
}

/** The database a command works on: `--db` (a file or a `postgres://` URL), else the default of SPEC §2, links resolved. */
export function databasePath(globals: GlobalOptions): string {
  return realDatabasePath(globals.db ?? defaultDatabasePath());
}

export interface Store {
  readonly db: SessionDB;
  /** The daemon's client when the command goes through the daemon, for its control ops. */
  readonly daemon: DaemonClient | null;
  readonly path: string;
}

/** The daemon serving the file, or null when none answers. */
export async function connectDaemon(path: string): Promise<DaemonClient | null> {
  try {
    const db = await openSessionDB({ path, mode: "daemon" });
    if (db instanceof DaemonClient) return db;
    await db.close();
    return null;
  } catch (err) {
    if (toSessionDBError(err).code === "UNAVAILABLE") return null;
    throw err;
  }
}

/** Opens the store; `mustExist` (every command but `import`) refuses a missing file rather than creating it. */
export async function openStore(globals: GlobalOptions, mustExist: boolean): Promise<Store> {
  const path = databasePath(globals);
  if (!globals.direct) {
    const daemon = await connectDaemon(path);
    if (daemon !== null) return { db: daemon, daemon, path };
  }
  // A PostgreSQL database is the server's to have: opening it creates only sessiondb's tables.
  if (mustExist && !isPostgresUrl(path) && !existsSync(path)) {
    throw new CliError("NOT_FOUND", `no database at ${path} (give --db PATH or set $SESSIONDB_PATH; nothing was created)`);
  }
  return { db: await openSessionDB({ path, mode: "direct" }), daemon: null, path };
}

/** Runs a command body with its store and output; the store is closed whatever happens. */
export async function withStore(
  command: Command,
  options: { mustExist: boolean },
  body: (store: Store, out: Output) => Promise<void>,
): Promise<void> {
  const globals = globalsOf(command);
  const store = await openStore(globals, options.mustExist);
  try {
    await body(store, new Output(globals.json === true));
  } finally {
    await store.db.close();
  }
}

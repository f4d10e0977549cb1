/**
 * Which path a command takes: `openSessionDB` decides (mode "auto": the daemon when one answers
 * for the file, else the file opened in this process; `--direct` skips the daemon). Commands that
 * only read open with `create: false`, so a missing file is never created.
 */
import { existsSync } from "node:fs";
import type { Command } from "commander";
import { UntrustedSocketError } from "../client/socket-trust.js";
import { SessionDBError, toSessionDBError } from "../errors.js";
import { openSessionDB } from "../open.js";
import type { DaemonControl } from "../protocol/control.js";
import type { OpenOptions, SessionDB } from "../session-db.js";
import { CliError } from "./cli-error.js";
import { checkDatabaseFile } from "./database-file.js";
import { Output } from "./output.js";
import { globalsOf, openOptions, resolvedOf, type GlobalOptions } from "./global-options.js";

export { filesOf, globalsOf, openOptions, resolvedOf, type GlobalOptions } from "./global-options.js";

export interface Store {
  readonly db: SessionDB;
  /** The daemon's control ops when the command goes through the daemon. */
  readonly daemon: DaemonControl | null;
  /** The database's real path. */
  readonly path: string;
}

/** A handle the daemon serves, and that daemon's control ops. */
export interface DaemonStore extends Store {
  readonly daemon: DaemonControl;
}

/** The daemon serving the file, or null when none answers. */
export async function connectDaemon(globals: GlobalOptions, options: OpenOptions = {}): Promise<DaemonStore | null> {
  return (await daemonOrRefusal(globals, options)).store;
}

/**
 * The daemon serving the file, or null with, in `refused`, why a socket found for it was not used
 * (another user's, or one another user could swap: UntrustedSocketError).
 */
export async function daemonOrRefusal(
  globals: GlobalOptions,
  options: OpenOptions = {},
): Promise<{ store: DaemonStore | null; refused: string | null }> {
  try {
    const db = await openSessionDB(openOptions(globals, { ...options, mode: "daemon" }));
    const { daemon } = db;
    if (daemon !== null) return { store: { db, daemon, path: db.files.db }, refused: null };
    await db.close();
  } catch (err) {
    if (err instanceof UntrustedSocketError) return { store: null, refused: err.message };
    if (toSessionDBError(err).code !== "UNAVAILABLE") throw err;
  }
  return { store: null, refused: null };
}

/** Opens the store; `mustExist` (every command but `import`) refuses a missing file rather than creating it. */
export async function openStore(globals: GlobalOptions, mustExist: boolean): Promise<Store> {
  // Said before SQLite's "unable to open database file"; a file still missing is the library's NOT_FOUND.
  // A PostgreSQL database is the server's to have: opening it creates only sessiondb's tables.
  const { engine, files } = resolvedOf(globals);
  if (engine === "sqlite" && (!mustExist || existsSync(files.db))) checkDatabaseFile(files.db);
  try {
    const db = await openSessionDB(openOptions(globals, { create: !mustExist }));
    return { db, daemon: db.daemon, path: db.files.db };
  } catch (err) {
    if (!(err instanceof SessionDBError) || err.code !== "NOT_FOUND") throw err;
    throw new CliError("NOT_FOUND", `${err.message}; give --db PATH or set $SESSIONDB_PATH`);
  }
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

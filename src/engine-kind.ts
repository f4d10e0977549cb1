/**
 * Which engine a database location names — decided here, once, where options are resolved — and
 * one table (`ENGINES`) of what each engine's locations mean for the files around a database.
 * Every other module takes the engine from a resolved `DatabaseLocation` (`ResolvedOptions.engine`)
 * or from the table; the direct stores (direct/open-direct.ts) and the daemon's engines
 * (daemon/daemon.ts) are keyed by the same `Engine` in their own layers.
 */
import { realpathSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { isPostgresUrl, pgIdentity, pgUrlWithoutSecrets } from "./database-location.js";
import { hermesHome, refuseTilde } from "./hermes-home.js";
import { hashedRuntimePath, MAX_SOCKET_PATH_BYTES } from "./socket-path.js";

/** The database behind a handle: a SQLite file, or a PostgreSQL database (a `postgres://` URL). */
export type Engine = "sqlite" | "postgres";

/** A database location with its engine decided. */
export interface DatabaseLocation {
  readonly engine: Engine;
  /** A SQLite file's real path (links resolved); a PostgreSQL URL as given, password included. */
  readonly path: string;
}

/** What an engine's locations mean for the files around a database. */
interface EngineFiles {
  /** The location `given` resolves to (see `DatabaseLocation.path`). */
  real(given: string): string;
  /**
   * What a daemon says it serves and a client checks: a file's real path, or a PostgreSQL
   * database's identity (the normalized URL without its password, the same for every spelling).
   */
  identity(path: string, env: NodeJS.ProcessEnv): string;
  /** The daemon's socket (SPEC §5), computed the same way by daemon and clients. */
  socket(path: string, env: NodeJS.ProcessEnv): string;
  /** The daemon's instance lock. */
  lock(path: string, env: NodeJS.ProcessEnv): string;
  /** The location as any local user may see it (a command line, a process title): without its secrets. */
  shown(path: string): string;
}

export const ENGINES = {
  sqlite: {
    real: realFilePath,
    identity: (path) => path,
    // `<real db path>.sock` when it fits in sockaddr_un, else a hash-named socket in the private runtime directory.
    socket: (path, env) => (Buffer.byteLength(`${path}.sock`) <= MAX_SOCKET_PATH_BYTES ? `${path}.sock` : hashedRuntimePath(path, ".sock", env)),
    lock: (path) => `${path}.daemon-lock`,
    shown: (path) => path,
  },
  postgres: {
    real: (url) => url,
    identity: (url, env) => pgIdentity(url, env),
    // A PostgreSQL database has no folder of its own: its socket and lock are named by a hash of
    // its identity, in the private runtime directory.
    socket: (url, env) => hashedRuntimePath(pgIdentity(url, env), ".sock", env),
    lock: (url, env) => hashedRuntimePath(pgIdentity(url, env), ".daemon-lock", env),
    shown: pgUrlWithoutSecrets,
  },
} as const satisfies Record<Engine, EngineFiles>;

function engineOf(location: string): Engine {
  return isPostgresUrl(location) ? "postgres" : "sqlite";
}

/**
 * The file's real path (links resolved), also for a file that does not exist yet. A `~` is a
 * name like any other, as the reference's `sqlite3.connect` takes it.
 */
function realFilePath(path: string): string {
  const absolute = resolve(path);
  try {
    return realpathSync(absolute);
  } catch {
    try {
      return join(realpathSync(dirname(absolute)), basename(absolute));
    } catch {
      return absolute;
    }
  }
}

/** The database `given` names: its engine, and its real path (a file's, links resolved) or URL. */
export function locateDatabase(given: string): DatabaseLocation {
  const engine = engineOf(given);
  return { engine, path: ENGINES[engine].real(given) };
}

/**
 * The default database (SPEC §2): `$SESSIONDB_PATH`, else `$HERMES_HOME/state.db`, else
 * `~/.hermes/state.db`, with Hermes' home found as upstream's `get_hermes_home()` finds it
 * (hermes-home.ts). A leading `~` in either variable is refused: neither is ever expanded.
 */
export function defaultDatabasePath(env: NodeJS.ProcessEnv = process.env): string {
  const given = env.SESSIONDB_PATH;
  if (given && engineOf(given) === "postgres") return given;
  if (given) {
    refuseTilde("SESSIONDB_PATH", given);
    return resolve(given);
  }
  return join(hermesHome(env), "state.db");
}

/** The daemon's socket for a database (SPEC §5), computed the same way by daemon and clients. */
export function defaultSocketPath(databasePath: string, env: NodeJS.ProcessEnv = process.env): string {
  const { engine, path } = locateDatabase(databasePath);
  return ENGINES[engine].socket(path, env);
}

/** What a daemon says it serves and a client checks (`EngineFiles.identity`). */
export function databaseIdentity(location: DatabaseLocation, env: NodeJS.ProcessEnv = process.env): string {
  return ENGINES[location.engine].identity(location.path, env);
}

/** Text that may name a database (a command-line argument), as any local user may see it: a URL without its secrets. */
export function shownLocation(text: string): string {
  return ENGINES[engineOf(text)].shown(text);
}

import { createHash } from "node:crypto";
import { chmodSync, lstatSync, mkdirSync, realpathSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { SessionDBError } from "./errors.js";
import { isPostgresUrl, pgIdentity } from "./database-location.js";
import { hermesHome, refuseTilde } from "./hermes-home.js";
import { identityName, type FileIdentity } from "./file-identity.js";

/**
 * The default database (SPEC §2): `$SESSIONDB_PATH`, else `$HERMES_HOME/state.db`, else
 * `~/.hermes/state.db`, with Hermes' home found as upstream's `get_hermes_home()` finds it
 * (hermes-home.ts). A leading `~` in either variable is refused: neither is ever expanded.
 */
export function defaultDatabasePath(env: NodeJS.ProcessEnv = process.env): string {
  if (isPostgresUrl(env.SESSIONDB_PATH)) return env.SESSIONDB_PATH;
  if (env.SESSIONDB_PATH) {
    refuseTilde("SESSIONDB_PATH", env.SESSIONDB_PATH);
    return resolve(env.SESSIONDB_PATH);
  }
  return join(hermesHome(env), "state.db");
}

/**
 * The file's real path (links resolved), also for a file that does not exist yet; a PostgreSQL
 * URL as given. A `~` is a name like any other, as the reference's `sqlite3.connect` takes it.
 */
export function realDatabasePath(path: string): string {
  if (isPostgresUrl(path)) return path;
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

/** Unix socket paths must fit in sockaddr_un (108 bytes with the terminating NUL). */
export const MAX_SOCKET_PATH_BYTES = 107;

/**
 * The daemon's socket for a database (SPEC §5), computed the same way by daemon and clients:
 * `<real db path>.sock` when it fits, else a hash-named file in a private runtime directory.
 */
export function defaultSocketPath(databasePath: string, env: NodeJS.ProcessEnv = process.env): string {
  return socketPathFor(realDatabasePath(databasePath), env);
}

/** `defaultSocketPath` for a path whose links are already resolved. */
export function socketPathFor(real: string, env: NodeJS.ProcessEnv = process.env): string {
  // A PostgreSQL database has no folder of its own: its socket is named by a hash of its identity
  // (the normalized URL without the password), the same for every spelling of the URL.
  if (isPostgresUrl(real)) return join(runtimeDirPath(env), `${hashName(pgIdentity(real, env))}.sock`);
  const beside = `${real}.sock`;
  if (Buffer.byteLength(beside) <= MAX_SOCKET_PATH_BYTES) return beside;
  return join(runtimeDirPath(env), `${hashName(real)}.sock`);
}

function hashName(text: string): string {
  return createHash("sha256").update(text).digest("hex").slice(0, 32);
}

/**
 * What a daemon says it serves and a client checks: a file's real path, or a PostgreSQL
 * database's identity (never its password).
 */
export function databaseIdentity(location: string): string {
  return isPostgresUrl(location) ? pgIdentity(location) : location;
}

/**
 * The socket a daemon also listens on under its file's identity (SPEC §5), so that a client
 * opening the file by another name (a hard link, a bind mount) finds it.
 */
export function identitySocketPath(id: FileIdentity, env: NodeJS.ProcessEnv = process.env): string {
  return join(runtimeDirPath(env), `${identityName(id)}.sock`);
}

/** The lock a daemon holds under its file's identity: one daemon per file, whatever its name. */
export function identityLockPath(id: FileIdentity, env: NodeJS.ProcessEnv = process.env): string {
  return join(runtimeDirPath(env), `${identityName(id)}.daemon-lock`);
}

/**
 * `$XDG_RUNTIME_DIR/sessiondb`, else `/tmp/sessiondb-<uid>`. Only named here: looking a daemon up
 * never creates it (a planted one must not stop direct mode), it checks what it finds
 * (socket-trust.ts); only autostart makes it (0700) before starting a daemon.
 */
export function runtimeDirPath(env: NodeJS.ProcessEnv = process.env): string {
  return env.XDG_RUNTIME_DIR ? join(env.XDG_RUNTIME_DIR, "sessiondb") : join("/tmp", `sessiondb-${process.getuid?.() ?? "user"}`);
}

/**
 * The daemon's side of `runtimeDirPath`: created 0700. In /tmp anyone may have made that name
 * first: a directory of another user (who could swap the socket) or a symbolic link is refused;
 * one of ours that is open to others is closed to 0700.
 */
export function privateRuntimeDir(env: NodeJS.ProcessEnv = process.env): string {
  const uid = process.getuid?.();
  const dir = runtimeDirPath(env);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  if (uid === undefined) return dir;
  const stat = lstatSync(dir);
  const refuse = (why: string) => new SessionDBError("IO", `refusing ${dir} as the private directory for the daemon's socket: ${why}`);
  if (stat.isSymbolicLink()) throw refuse("it is a symbolic link");
  if (!stat.isDirectory()) throw refuse("it is not a directory");
  if (stat.uid !== uid) throw refuse(`it is owned by uid ${stat.uid}, not by this user (uid ${uid})`);
  if ((stat.mode & 0o077) !== 0) chmodSync(dir, 0o700);
  return dir;
}

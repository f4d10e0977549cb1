/** Where a daemon's sockets and locks are named: beside the database, or in the private runtime directory. */
import { createHash } from "node:crypto";
import { chmodSync, lstatSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { SessionDBError } from "./errors.js";
import { identityName, type FileIdentity } from "./file-identity.js";

/** Unix socket paths must fit in sockaddr_un (108 bytes with the terminating NUL). */
export const MAX_SOCKET_PATH_BYTES = 107;

/** A file of the private runtime directory named by a hash of `text` (a path too long, a database's identity). */
export function hashedRuntimePath(text: string, suffix: string, env: NodeJS.ProcessEnv = process.env): string {
  return join(runtimeDirPath(env), `${createHash("sha256").update(text).digest("hex").slice(0, 32)}${suffix}`);
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

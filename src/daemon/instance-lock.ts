import { lstatSync, readlinkSync, unlinkSync, type Stats } from "node:fs";
import { isBusyError, SessionDBError, toSessionDBError } from "../errors.js";
import { openLockFile, type Connection } from "../sqlite/connection.js";
import { createPrivateFile } from "../sqlite/private-files.js";
import type { HelloResult } from "../protocol/control.js";
import { probeDaemon } from "../protocol/probe.js";
import { fileIdentity, sameFile, type FileIdentity } from "../file-identity.js";
import { FileGuard } from "../file-guard.js";
import { userName } from "../user-name.js";

/**
 * One daemon per database. The lock is an exclusive SQLite lock on a small file, held for the
 * daemon's lifetime: the OS releases it when the process dies, even by `kill -9`, so a crashed
 * daemon never blocks the next one, and two daemons starting at the same instant cannot both win.
 * The daemon holds one beside the database's name (its -wal and -shm are that name's); one per
 * file, whatever its name, is the guard on the file itself (file-guard.ts). The lock file is
 * removed when the daemon lets go of it, and made again if someone removes it meanwhile.
 */
export class InstanceLock {
  readonly path: string;
  readonly #db: Connection;
  /** The lock file this lock is on: removed at release only while the path still names it. */
  readonly #file: Stats;

  private constructor(path: string, db: Connection, file: Stats) {
    this.path = path;
    this.#db = db;
    this.#file = file;
  }

  /** Takes the lock file, or fails with UNAVAILABLE when another process holds it. */
  static acquire(path: string): InstanceLock {
    for (;;) {
      prepareLockFile(path);
      const before = lstatSync(path, { throwIfNoEntry: false });
      if (before === undefined) continue; // removed at once: made again (private) first
      let db: Connection;
      try {
        db = openLockFile(path);
      } catch (err) {
        throw lockFileError(path, err);
      }
      try {
        db.pragma("locking_mode = EXCLUSIVE");
        db.exec("BEGIN EXCLUSIVE");
        db.exec("CREATE TABLE IF NOT EXISTS daemon (pid INTEGER NOT NULL, started_at REAL NOT NULL)");
        db.exec("DELETE FROM daemon");
        db.prepare("INSERT INTO daemon (pid, started_at) VALUES (?, ?)").run(process.pid, Date.now() / 1000);
        db.exec("COMMIT"); // in EXCLUSIVE locking mode the lock outlives the transaction
      } catch (err) {
        db.close();
        // Removed while this took it (a client removing what looked like a stale lock file, just
        // before this locked it): SQLite fails writing a file that is gone; take the one there now.
        if (!sameStats(before, lstatSync(path, { throwIfNoEntry: false }))) continue;
        if (isBusyError(err)) {
          throw new SessionDBError("UNAVAILABLE", `another sessiondb daemon holds ${path}`, { cause: err });
        }
        throw lockFileError(path, err);
      }
      // Lock files are removed by whoever lets go of them (or finds them stale): a lock won on
      // a file removed meanwhile is no lock. Take the one at the path now.
      const after = lstatSync(path, { throwIfNoEntry: false });
      if (sameStats(before, after)) return new InstanceLock(path, db, after!);
      db.close();
    }
  }

  /** Whether the path still names the lock file this lock holds (nobody removed or replaced it). */
  get present(): boolean {
    try {
      const now = lstatSync(this.path, { throwIfNoEntry: false });
      return now !== undefined && now.dev === this.#file.dev && now.ino === this.#file.ino;
    } catch {
      return false; // its folder is no folder now
    }
  }

  /** Removes the lock file (while it is still this one) and lets go of it. Idempotent. */
  release(): void {
    if (!this.#db.open) return;
    try {
      if (this.present) {
        unlinkSync(this.path);
        unlinkSync(`${this.path}-journal`);
      }
    } catch {
      // no journal, or the folder is gone: nothing of ours is left there
    }
    this.#db.close();
  }
}

function sameStats(a: Stats | undefined, b: Stats | undefined): boolean {
  return a !== undefined && b !== undefined && a.dev === b.dev && a.ino === b.ino;
}

/**
 * Creates the lock file private, exclusively and without following links (createPrivateFile), or
 * checks the one there: root's daemon must never create or write a file wherever a planted
 * symbolic link (or hard link) points. Its rollback journal is checked the same way.
 */
function prepareLockFile(path: string): void {
  try {
    createPrivateFile(path);
  } catch (err) {
    throw lockFileError(path, err);
  }
  for (const file of [path, `${path}-journal`]) {
    const stat = lstatSync(file, { throwIfNoEntry: false });
    if (stat === undefined || (stat.isFile() && stat.nlink === 1)) continue;
    const what = stat.isSymbolicLink() ? `a symbolic link (to ${readlinkSync(file)})` : stat.isFile() ? "a file with several names (hard links)" : "not a regular file";
    throw new SessionDBError("IO", `refusing ${file} as the daemon's lock file: it is ${what}; remove it if nobody planted it`);
  }
}

/**
 * A lock file that cannot be created or opened is an I/O failure naming it, never INTERNAL; one
 * of another user's that this user may not open is that user's daemon's, and said so.
 */
function lockFileError(path: string, err: unknown): SessionDBError {
  const others = othersLockFile(path, err);
  if (others !== null) return others;
  const e = toSessionDBError(err);
  return new SessionDBError(e.code === "INTERNAL" ? "IO" : e.code, `cannot use the daemon's lock file ${path}: ${e.message}`, { cause: err });
}

/**
 * When the lock file at `path` is another user's (and this user is not root): that user's daemon
 * serves (or served) the database, said so — rather than as a file this user cannot open.
 */
export function othersLockFile(path: string, cause?: unknown): SessionDBError | null {
  const me = process.getuid?.();
  const owner = lstatSync(path, { throwIfNoEntry: false })?.uid;
  if (me === undefined || me === 0 || owner === undefined || owner === me) return null;
  return new SessionDBError(
    "UNAVAILABLE",
    `cannot take the daemon's lock file ${path}: it belongs to ${userName(owner)}, whose daemon serves (or served) this database; use their daemon, or --direct`,
    { cause },
  );
}

/** How long a start waits for a lock holder to listen, or to let go of a file that is gone. */
const HOLDER_WAIT_MS = 10_000;

/**
 * The guard on the file itself (file-guard.ts), or an UNAVAILABLE error naming the daemon that
 * already holds it, by whatever name: it is asked on the file's identity socket (`socketPath`).
 * A holder answering on no socket — its runtime folder was removed: it makes its sockets again
 * within a moment — or a client testing the guard at this instant is waited for. Null when
 * flock(1) cannot be run here (the caller falls back to a lock file).
 */
export async function acquireFileGuard(database: string, identity: FileIdentity, socketPath: string): Promise<FileGuard | null> {
  const until = Date.now() + HOLDER_WAIT_MS;
  for (;;) {
    const guard = await FileGuard.take(database, identity);
    if (guard instanceof FileGuard) return guard;
    if (guard === "unknown") return null;
    await refuseIfServed(socketPath, database);
    if (Date.now() > until) {
      throw new SessionDBError("UNAVAILABLE", `another sessiondb daemon holds ${database} (by this or another name; its lock on the file itself), but answers on no socket`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Throws UNAVAILABLE when a daemon answering on `socketPath` serves `database` (by any name). */
async function refuseIfServed(socketPath: string, database: string): Promise<void> {
  // The winner of a simultaneous start may not listen yet: ask for a moment.
  const hello: HelloResult | null = await probeDaemon(socketPath, 500);
  if (hello !== null && (hello.database === database || sameFile(fileIdentity(hello.database), fileIdentity(database)))) {
    const alias = hello.database === database ? "" : ` under another name, ${hello.database} (the same file)`;
    throw new SessionDBError("UNAVAILABLE", `a sessiondb daemon (pid ${hello.pid}) already serves ${database}${alias} on ${socketPath}`);
  }
}

/**
 * The instance lock at `lockPath`, or an UNAVAILABLE error naming the daemon that already serves
 * the file `database` (it listens on `socketPath`). A holder that serves another file — one
 * whose file was removed, and whose inode number the new file got at once (the identity lock) —
 * is stopping (its file watch saw the removal): the start waits for it to let go.
 */
export async function acquireInstanceLock(lockPath: string, socketPath: string, database: string): Promise<InstanceLock> {
  const until = Date.now() + HOLDER_WAIT_MS;
  for (;;) {
    try {
      return InstanceLock.acquire(lockPath);
    } catch (err) {
      if (!(err instanceof SessionDBError) || err.code !== "UNAVAILABLE" || !isBusyError(err.cause ?? err)) throw err;
    }
    await refuseIfServed(socketPath, database);
    if (Date.now() > until) {
      throw new SessionDBError("UNAVAILABLE", `another sessiondb daemon already serves ${database} (it holds ${lockPath})`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

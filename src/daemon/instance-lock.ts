import type { DatabaseFiles } from "../database-files.js";
import { isBusyError, SessionDBError } from "../errors.js";
import { openLockFile, type Connection } from "../engine/connection.js";
import { createPrivateFile } from "../engine/private-files.js";
import type { HelloResult } from "../protocol/control.js";
import { probeDaemon } from "../protocol/probe.js";

/**
 * One daemon per database. The lock is an exclusive SQLite lock on a small file beside the
 * database, held for the daemon's lifetime: the OS releases it when the process dies, even by
 * `kill -9`, so a crashed daemon never blocks the next one, and two daemons starting at the same
 * instant cannot both win.
 */
export class InstanceLock {
  readonly path: string;
  readonly #db: Connection;

  private constructor(path: string, db: Connection) {
    this.path = path;
    this.#db = db;
  }

  /** Takes the lock file, or fails with UNAVAILABLE when another process holds it. */
  static acquire(path: string): InstanceLock {
    createPrivateFile(path);
    const db = openLockFile(path);
    try {
      db.pragma("locking_mode = EXCLUSIVE");
      db.exec("BEGIN EXCLUSIVE");
      db.exec("CREATE TABLE IF NOT EXISTS daemon (pid INTEGER NOT NULL, started_at REAL NOT NULL)");
      db.exec("DELETE FROM daemon");
      db.prepare("INSERT INTO daemon (pid, started_at) VALUES (?, ?)").run(process.pid, Date.now() / 1000);
      db.exec("COMMIT"); // in EXCLUSIVE locking mode the lock outlives the transaction
      return new InstanceLock(path, db);
    } catch (err) {
      db.close();
      if (isBusyError(err)) {
        throw new SessionDBError("UNAVAILABLE", `another sessiondb daemon holds ${path}`);
      }
      throw err;
    }
  }

  release(): void {
    if (this.#db.open) this.#db.close();
  }
}

/** The instance lock, or an UNAVAILABLE error naming the daemon that already serves the file. */
export async function acquireInstanceLock(files: DatabaseFiles): Promise<InstanceLock> {
  try {
    return InstanceLock.acquire(files.lock);
  } catch (err) {
    if (!(err instanceof SessionDBError) || err.code !== "UNAVAILABLE") throw err;
    // The winner of a simultaneous start may not listen yet: ask for a moment.
    const until = Date.now() + 5000;
    let hello: HelloResult | null = null;
    while (hello === null && Date.now() < until) {
      hello = await probeDaemon(files.socket, 500);
      if (hello === null) await new Promise((r) => setTimeout(r, 100));
    }
    const who = hello === null ? "another sessiondb daemon" : `a sessiondb daemon (pid ${hello.pid})`;
    throw new SessionDBError(
      "UNAVAILABLE",
      `${who} already serves ${files.db}${hello === null ? ` (it holds ${files.lock})` : ` on ${files.socket}`}`,
    );
  }
}

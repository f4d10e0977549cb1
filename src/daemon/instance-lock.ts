import Database from "better-sqlite3";
import { SessionDBError } from "../errors.js";
import { createPrivateFile } from "../engine/private-files.js";

/**
 * One daemon per database. The lock is an exclusive SQLite lock on a small file beside the
 * database, held for the daemon's lifetime: the OS releases it when the process dies, even by
 * `kill -9`, so a crashed daemon never blocks the next one, and two daemons starting at the same
 * instant cannot both win.
 */
export class InstanceLock {
  readonly path: string;
  readonly #db: Database.Database;

  private constructor(path: string, db: Database.Database) {
    this.path = path;
    this.#db = db;
  }

  /** The lock file for a database. */
  static pathFor(databasePath: string): string {
    return `${databasePath}.daemon-lock`;
  }

  /** Takes the lock, or fails with UNAVAILABLE when another process holds it. */
  static acquire(databasePath: string): InstanceLock {
    const path = InstanceLock.pathFor(databasePath);
    createPrivateFile(path);
    const db = new Database(path, { timeout: 0 });
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
      const code = (err as { code?: string }).code ?? "";
      if (code.startsWith("SQLITE_BUSY") || code.startsWith("SQLITE_LOCKED")) {
        throw new SessionDBError("UNAVAILABLE", `another sessiondb daemon holds ${path}`);
      }
      throw err;
    }
  }

  release(): void {
    if (this.#db.open) this.#db.close();
  }
}

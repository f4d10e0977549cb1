/**
 * The daemon's second write connection, on its main thread (the thread that serves the socket),
 * for one client writing one message at a time: its write, finding the writer thread idle,
 * commits here at once instead of crossing to the writer thread and back. Those two thread
 * wake-ups cost more than the write's SQL (issue 15). Everything else goes to the writer
 * thread: batches (the main thread keeps reading sockets while the thread commits), writes while
 * it is busy (their order is kept), writes while reads are running (their replies would wait for
 * the commit), while the WAL guard holds writes, after an I/O error until the thread has
 * reclaimed the WAL, and whenever another process holds the lock (this connection never waits
 * for it: the thread does).
 */
import { SessionDBError, toWireError } from "../errors.js";
import { openConnection, type Connection } from "../engine/connection.js";
import { stillServed } from "../file-identity.js";
import { GroupCommit, type BatchResult } from "./group-commit.js";
import type { WriteJob, WriterConfig } from "./writer-messages.js";

/** Writes of one turn of the event loop that may commit here: one (a lone client's). */
const MOST_JOBS = 1;

export class LoneWriter {
  readonly #conn: Connection;
  readonly #group: GroupCommit;
  /** Set by the WAL guard, as the thread's hold: no transaction begins. */
  #held = false;
  /**
   * After a write failed with an I/O error (here or on the writer thread), until the writer thread
   * commits a clean batch: the thread gives the WAL's space back to the disk before its next one.
   */
  #suspended = false;

  private constructor(conn: Connection, config: WriterConfig) {
    this.#conn = conn;
    this.#group = new GroupCommit(conn, config);
  }

  /**
   * Opens the connection once the writer thread has opened (and migrated) the file. Null when the
   * path no longer names the file served: the writer thread alone finds out what to do then.
   */
  static open(config: WriterConfig): LoneWriter | null {
    // No busy wait: a locked file sends the write to the thread, and the main thread never blocks on it.
    const conn = openConnection(config.path, { busyTimeoutMs: 0, synchronous: config.synchronous });
    if (!stillServed(config.path, config.identity)) {
      conn.close();
      return null;
    }
    // SQLite's automatic checkpoint stays on (every 1,000 pages, inside a COMMIT, as the writer
    // thread's): a checkpoint run by another thread meanwhile never finds the WAL still, so the WAL
    // would never start over and every commit would append to a growing file, a dearer fsync.
    conn.pragma(`journal_size_limit = ${Math.floor(config.walLimitBytes)}`);
    return new LoneWriter(conn, config);
  }

  /** Commits `jobs` here, or answers null: they go to the writer thread. */
  run(jobs: WriteJob[]): BatchResult | null {
    if (jobs.length > MOST_JOBS || this.#held || this.#suspended || this.#group.fileReplaced || !this.#conn.open) return null;
    let result: BatchResult;
    try {
      result = this.#group.run(jobs);
    } catch (err) {
      return this.#broken(jobs, err);
    }
    if (result.busy) return null;
    if (result.ioFailed) this.#suspended = true;
    return result;
  }

  /**
   * What would kill the writer thread (a failing ROLLBACK) must not kill the daemon: closing the
   * connection rolls back what it had begun, the jobs fail unapplied, and from then on every write
   * goes to the writer thread.
   */
  #broken(jobs: WriteJob[], err: unknown): BatchResult {
    this.close();
    const error = toWireError(new SessionDBError("INTERNAL", `this write was not applied: ${(err as Error).message}`, { cause: err }));
    const unapplied = jobs.map((j) => ({ seq: j.seq, ok: false as const, error }));
    return { unapplied, batch: null, left: [], busy: false, cjkBehind: false, ioFailed: false };
  }

  hold(on: boolean): void {
    this.#held = on;
  }

  /** What the writer thread's last batch says of the disk: full (an I/O error), or room again. */
  threadBatch(ioFailed: boolean): void {
    this.#suspended = ioFailed;
  }

  /** Fault injection: the same cap as the writer thread's connection (PRAGMA max_page_count is per connection). */
  maxPageCount(pages: number | null): void {
    this.#conn.pragma(`max_page_count = ${pages ?? 4294967294}`);
  }

  /** Idempotent. Nothing runs here between turns of the event loop, so nothing is cut short. */
  close(): void {
    if (this.#conn.open) this.#conn.close();
  }
}

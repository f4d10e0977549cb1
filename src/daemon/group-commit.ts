/**
 * One group commit on a write connection of the daemon: the queued requests in one
 * `BEGIN IMMEDIATE` transaction, a savepoint per request (a failing request rolls back alone and
 * gets its own error), the outcomes only after COMMIT (an acknowledged write is durable).
 * The writer thread runs it for every batch; the daemon's main thread for a lone write that finds
 * the writer thread idle (lone-writer.ts).
 */
import { SessionDBError, isBusyError, toWireError } from "../errors.js";
import { catchUpCjkIndex } from "../engine/cjk-index.js";
import type { Connection, Statement } from "../engine/connection.js";
import { runOperation } from "../engine/operations.js";
import { stillServed, type FileIdentity } from "../file-identity.js";
import { deletesMessages } from "../operation-catalogue.js";
import type { WriteJob, WriteOutcome } from "./writer-messages.js";

export interface CommittedBatch {
  outcomes: WriteOutcome[];
  commitMs: number;
  lockMs: number;
}

export interface BatchResult {
  /** Answered without running: past their deadline, or the transaction could not begin. */
  unapplied: WriteOutcome[];
  /** The outcomes of the jobs that ran, after COMMIT (or all failed with its error); null when none ran. */
  batch: CommittedBatch | null;
  /** Jobs for the next batch: all of them when another process holds the lock (`busy`), else those `maxBatchMs` left out. */
  left: WriteJob[];
  /** Another process holds the write lock: nothing ran. */
  busy: boolean;
  /** The CJK index has entries left to catch up on or sweep. */
  cjkBehind: boolean;
  /** A write failed with an I/O error (a full disk): the WAL's space should go back to the disk. */
  ioFailed: boolean;
}

/** A write that failed with an I/O error (a full disk). */
export function failedIO(outcome: WriteOutcome): boolean {
  return !outcome.ok && outcome.error.code === "IO";
}

function fail(job: WriteJob, err: unknown): WriteOutcome {
  return { seq: job.seq, ok: false, error: toWireError(err) };
}

function expiredError(job: WriteJob): SessionDBError {
  return new SessionDBError("TIMEOUT", `${job.op} was not started before its deadline; it was not applied`);
}

/** The file was replaced (or removed) under the daemon: what was just committed went to the old one. */
export function replacedError(path: string): SessionDBError {
  return new SessionDBError(
    "UNAVAILABLE",
    `${path} was replaced or removed while the daemon had it open: this write is not in ${path} (at most it went to the old file); the daemon is stopping, retry`,
  );
}

export class GroupCommit {
  readonly #conn: Connection;
  readonly #path: string;
  readonly #identity: FileIdentity;
  /** Longest a transaction keeps adding requests (and so holds the write lock), in ms. */
  readonly #maxBatchMs: number;
  /** Transaction control, prepared once: these run several times per request. */
  readonly #begin: Statement;
  readonly #commit: Statement;
  readonly #rollback: Statement;
  readonly #savepoint: Statement;
  readonly #release: Statement;
  readonly #rollbackTo: Statement;
  /** Set once a commit found the path naming another file: nothing more is applied to the old one. */
  fileReplaced = false;

  constructor(conn: Connection, config: { path: string; identity: FileIdentity; maxBatchMs: number }) {
    this.#conn = conn;
    this.#path = config.path;
    this.#identity = config.identity;
    this.#maxBatchMs = config.maxBatchMs;
    this.#begin = conn.prepare("BEGIN IMMEDIATE");
    this.#commit = conn.prepare("COMMIT");
    this.#rollback = conn.prepare("ROLLBACK");
    this.#savepoint = conn.prepare("SAVEPOINT request");
    this.#release = conn.prepare("RELEASE request");
    this.#rollbackTo = conn.prepare("ROLLBACK TO request");
  }

  /**
   * Runs `jobs` in one transaction: expired ones are answered TIMEOUT and never applied; when
   * another process holds the lock nothing runs (`busy`) and the caller tries again later, with
   * whatever arrives meanwhile. Any other failure to begin (I/O) is every job's answer.
   */
  run(jobs: WriteJob[]): BatchResult {
    const result: BatchResult = { unapplied: [], batch: null, left: [], busy: false, cjkBehind: false, ioFailed: false };
    if (this.fileReplaced) {
      result.unapplied = jobs.map((j) => fail(j, replacedError(this.#path)));
      return result;
    }
    const now = Date.now();
    const live = jobs.filter((j) => j.deadline > now);
    result.unapplied = jobs.filter((j) => j.deadline <= now).map((j) => fail(j, expiredError(j)));
    if (live.length === 0) return result;
    try {
      this.#begin.run();
    } catch (err) {
      if (isBusyError(err)) {
        result.busy = true;
        result.left = live;
      } else {
        result.unapplied.push(...live.map((j) => fail(j, err)));
      }
      return result;
    }
    const conn = this.#conn;
    const lockedAt = performance.now();
    const outcomes: WriteOutcome[] = [];
    let done = 0;
    for (const job of live) {
      if (done > 0 && performance.now() - lockedAt > this.#maxBatchMs) break;
      // Checked again as each request starts: the ones before it in the batch took time.
      outcomes.push(Date.now() < job.deadline ? this.#apply(job) : fail(job, expiredError(job)));
      done++;
      if (!conn.inTransaction) break; // SQLite rolled the whole transaction back (disk full, I/O error)
    }
    result.left = live.slice(done);
    const ran = live.slice(0, done);
    if (conn.inTransaction) result.cjkBehind = catchUpCjkIndex(conn) || ran.some((j) => deletesMessages(j.op));
    const commitStart = performance.now();
    if (conn.inTransaction) {
      try {
        this.#commit.run();
        if (!stillServed(this.#path, this.#identity)) {
          this.fileReplaced = true;
          outcomes.splice(0, outcomes.length, ...ran.map((j) => fail(j, replacedError(this.#path))));
        }
      } catch (err) {
        if (conn.inTransaction) this.#rollback.run();
        outcomes.splice(0, outcomes.length, ...ran.map((j) => fail(j, err)));
      }
    } else {
      // Nothing of this transaction survived: no request in it may be acknowledged.
      const cause = outcomes.findLast((o) => !o.ok);
      const err = cause && !cause.ok ? cause.error : { code: "IO" as const, message: "the transaction was rolled back" };
      outcomes.splice(0, outcomes.length, ...ran.map((j) => ({ seq: j.seq, ok: false as const, error: err })));
    }
    const end = performance.now();
    result.ioFailed = outcomes.some(failedIO);
    result.batch = { outcomes, commitMs: end - commitStart, lockMs: end - lockedAt };
    return result;
  }

  /** Runs one job inside its own savepoint. */
  #apply(job: WriteJob): WriteOutcome {
    this.#savepoint.run();
    try {
      const result = runOperation(this.#conn, job.op, job.params);
      this.#release.run();
      return { seq: job.seq, ok: true, result };
    } catch (err) {
      if (this.#conn.inTransaction) {
        this.#rollbackTo.run();
        this.#release.run();
      }
      return fail(job, err);
    }
  }
}

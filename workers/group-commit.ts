/**
 * The group commit: everything queued (up to `maxBatch` requests, for at most `maxBatchMs`) runs
 * in one `BEGIN IMMEDIATE` transaction; when a request fails, the batch is rolled back and runs
 * again in a new transaction with a savepoint per request, so the failing one rolls back alone and
 * gets its own error (a batch in which nothing fails has no savepoint at all). Outcomes go back to
 * the main thread only after COMMIT, so an acknowledged write is durable. Requests whose deadline passes before they start are answered
 * TIMEOUT and never applied.
 */
import { isBusyError, toWireError } from "../src/errors.js";
import { newerSchemaError } from "../src/sqlite/database-file.js";
import { KEY_PRUNE_EVERY_MS } from "../src/operations/idempotency-keys.js";
import { expiredWriteError, mayStart, splitExpired } from "../src/operations/write-deadline.js";
import { pruneKeys, runKeyedWrite } from "../src/sqlite/keyed-write.js";
import type { WriteJob, WriteOutcome } from "../src/daemon/writer-messages.js";
import type { FeedEvent } from "../src/operations/watch-filter.js";
import type { CjkUpkeep } from "./cjk-upkeep.js";
import type { FaultInjection } from "./fault-injection.js";
import { walLostError, type FileGuard } from "./file-guard.js";
import type { WalUpkeep } from "./wal-upkeep.js";
import type { WriterFeed } from "./writer-feed.js";
import type { WriterContext } from "./writer-context.js";

function fail(job: WriteJob, err: unknown): WriteOutcome {
  return { seq: job.seq, ok: false, error: toWireError(err) };
}

export class GroupCommit {
  readonly #ctx: WriterContext;
  readonly #guard: FileGuard;
  readonly #wal: WalUpkeep;
  readonly #cjk: CjkUpkeep;
  readonly #faults: FaultInjection;
  readonly #feed: WriterFeed;
  /** [first, last] seq of the batch being committed and not yet answered; [0, 0] otherwise. */
  readonly #committing: Float64Array;
  readonly #queue: WriteJob[] = [];
  /** When expired idempotency keys were last pruned. */
  #keysPrunedAt = -Infinity;

  constructor(ctx: WriterContext, guard: FileGuard, wal: WalUpkeep, cjk: CjkUpkeep, faults: FaultInjection, feed: WriterFeed) {
    this.#feed = feed;
    this.#ctx = ctx;
    this.#guard = guard;
    this.#wal = wal;
    this.#cjk = cjk;
    this.#faults = faults;
    this.#committing = new Float64Array(ctx.config.committing);
  }

  /** Requests wait in the queue. */
  get waiting(): boolean {
    return this.#queue.length > 0;
  }

  enqueue(jobs: WriteJob[]): void {
    for (const job of jobs) this.#queue.push(job);
  }

  /** One group commit. False when another process holds the write lock (the jobs stay queued). */
  run(): boolean {
    const { conn, config } = this.#ctx;
    const queue = this.#queue;
    if (this.#guard.fileReplaced) {
      this.#unapplied(queue.splice(0).map((j) => fail(j, this.#guard.replacedError())));
      return true;
    }
    const walLost = this.#guard.walLost;
    if (walLost !== null) {
      this.#unapplied(queue.splice(0).map((j) => fail(j, walLostError(walLost))));
      return true;
    }
    const version = this.#ctx.newerVersion;
    if (version !== null) {
      this.#unapplied(queue.splice(0).map((j) => fail(j, newerSchemaError(config.path, version, j.op))));
      return true;
    }
    const tx = this.#ctx.tx!;
    const live = this.#dropExpired(queue.splice(0, config.maxBatch));
    let jobs = this.#acquireLock(live);
    if (jobs === null) {
      queue.unshift(...live);
      return false;
    }
    if (jobs.length === 0) return true;
    const lockedAt = performance.now();
    // No savepoint around the batch: with one open, every statement makes FTS5 flush its pending
    // terms to disk (its xSavepoint), and every page first written goes to the statement journal.
    let { outcomes, done, failed } = this.#runJobs(jobs, lockedAt, false);
    if (failed && conn.inTransaction) {
      // A request failed, maybe halfway through its statements: the batch is rolled back and runs
      // again in a new transaction, each request in a savepoint of its own, so the failing one
      // rolls back alone. Another process may take the lock in between: the jobs then wait in
      // the queue, as at any busy BEGIN.
      tx.rollback.run();
      const again = this.#acquireLock(jobs);
      if (again === null) {
        queue.unshift(...jobs);
        return false;
      }
      if (again.length === 0) return true;
      ({ outcomes, done } = this.#runJobs(jobs, lockedAt, true));
    }
    queue.unshift(...jobs.slice(done));
    jobs = jobs.slice(0, done);
    if (conn.inTransaction) this.#pruneKeys(lockedAt);
    if (conn.inTransaction) {
      try {
        this.#cjk.afterBatch(jobs, lockedAt);
      } catch (err) {
        // The catch-up failed inside the batch's transaction (a full disk: its SAVEPOINT makes
        // FTS5 write the terms the batch left pending): nothing of the batch is committed, the
        // catch-up stays due.
        if (conn.inTransaction) tx.rollback.run();
        outcomes.splice(0, outcomes.length, ...jobs.map((j) => fail(j, err)));
      }
    }
    const commitStart = performance.now();
    let committed = false;
    if (conn.inTransaction) {
      // Until these outcomes are posted, a death of this thread leaves their fate unknown.
      this.#committing[0] = jobs[0]?.seq ?? 0;
      this.#committing[1] = jobs.at(-1)?.seq ?? 0;
      try {
        // Checked under the write lock, before COMMIT writes: a WAL cut short would get frames
        // past a hole, unseen by any size check afterwards.
        if (!this.#guard.stillOurs()) {
          tx.rollback.run();
          this.#wal.salvage();
          const err = this.#guard.notOursError();
          outcomes.splice(0, outcomes.length, ...jobs.map((j) => fail(j, err)));
        } else {
          tx.commit.run();
          if (!this.#guard.stillServed()) {
            outcomes.splice(0, outcomes.length, ...jobs.map((j) => fail(j, this.#guard.replacedError())));
          } else committed = true;
        }
      } catch (err) {
        if (conn.inTransaction) tx.rollback.run();
        outcomes.splice(0, outcomes.length, ...jobs.map((j) => fail(j, err)));
      }
    } else {
      // Nothing of this transaction survived: no request in it may be acknowledged.
      const cause = outcomes.findLast((o) => !o.ok);
      const err = cause && !cause.ok ? cause.error : { code: "IO" as const, message: "the transaction was rolled back" };
      outcomes.splice(0, outcomes.length, ...jobs.map((j) => ({ seq: j.seq, ok: false as const, error: err })));
    }
    const end = performance.now();
    if (outcomes.some((o) => !o.ok && o.error.code === "IO")) this.#wal.reclaimSoon();
    this.#faults.afterCommit();
    this.#answer(outcomes, end - commitStart, end - lockedAt, committed && this.#feed.on ? this.#feed.afterCommit(jobs, outcomes) : undefined);
    return true;
  }

  /**
   * Hands a committed (or failed) batch's outcomes to the daemon, which answers each request: from
   * here their fate is known.
   */
  #answer(outcomes: WriteOutcome[], commitMs: number, lockMs: number, feed: FeedEvent[] | undefined): void {
    this.#ctx.post(feed === undefined ? { type: "batch", outcomes, commitMs, lockMs } : { type: "batch", outcomes, commitMs, lockMs, feed });
    this.#committing.fill(0);
  }

  /** Requests answered without running: past their deadline, refused, or the transaction could not begin. */
  #unapplied(outcomes: WriteOutcome[]): void {
    this.#ctx.post({ type: "unapplied", outcomes });
  }

  /** Answers the jobs whose deadline has passed, without applying them. Returns the live ones. */
  #dropExpired(jobs: WriteJob[]): WriteJob[] {
    const { live, expired } = splitExpired(jobs);
    if (expired.length > 0) this.#unapplied(expired.map((j) => fail(j, expiredWriteError(j.op))));
    return live;
  }

  /**
   * Takes the write lock for the live jobs (expired ones are answered TIMEOUT). Null when another
   * process holds it: the caller tries again after a pause, back in the event loop, so requests
   * that arrive meanwhile join the wait and expire on time too. Any other failure to begin (I/O)
   * is every job's answer. Returns the jobs to run.
   */
  #acquireLock(jobs: WriteJob[]): WriteJob[] | null {
    if (jobs.length === 0) return jobs;
    try {
      this.#ctx.tx!.begin.run();
      return jobs;
    } catch (err) {
      if (isBusyError(err)) return null;
      this.#unapplied(jobs.map((j) => fail(j, err)));
      return [];
    }
  }

  /**
   * Runs the batch's jobs in order, while the batch is within `maxBatchMs`: each in a savepoint of
   * its own with `savepoints`, else as they are (the fast path: most batches fail nothing).
   * Returns their outcomes, how many ran, and whether one failed (the fast path stops there);
   * stops early too when SQLite rolled the whole transaction back.
   */
  #runJobs(jobs: WriteJob[], lockedAt: number, savepoints: boolean): { outcomes: WriteOutcome[]; done: number; failed: boolean } {
    const { conn, config } = this.#ctx;
    const outcomes: WriteOutcome[] = [];
    let done = 0;
    let failed = false;
    for (const job of jobs) {
      if (done > 0 && performance.now() - lockedAt > config.maxBatchMs) break;
      // Checked again as each request starts: the ones before it in the batch took time.
      const outcome = mayStart(job.deadline) ? this.#apply(job, savepoints) : null;
      outcomes.push(outcome ?? fail(job, expiredWriteError(job.op)));
      done++;
      if (!conn.inTransaction) break; // SQLite rolled the whole transaction back (disk full, I/O error)
      if (outcome !== null && !outcome.ok) {
        failed = true;
        if (!savepoints) break; // the batch runs again, with savepoints
      }
    }
    return { outcomes, done, failed };
  }

  /** A bounded step of pruning expired idempotency keys, riding in a group commit once a minute at most. */
  #pruneKeys(lockedAt: number): void {
    if (lockedAt - this.#keysPrunedAt < KEY_PRUNE_EVERY_MS) return;
    this.#keysPrunedAt = lockedAt;
    try {
      pruneKeys(this.#ctx.conn, this.#ctx.config.keyRetentionHours);
    } catch (err) {
      this.#ctx.post({ type: "log", line: `pruning expired idempotency keys failed: ${(err as Error).message}` });
    }
  }

  /** Runs one job, inside its own savepoint with `savepoint`. */
  #apply(job: WriteJob, savepoint: boolean): WriteOutcome {
    const { conn } = this.#ctx;
    if (!savepoint) {
      try {
        return { seq: job.seq, ok: true, result: runKeyedWrite(conn, job.op, job.params, job.key) };
      } catch (err) {
        return fail(job, err);
      }
    }
    const tx = this.#ctx.tx!;
    try {
      // Taking it can fail too (a full disk: FTS5 writes its pending terms at a savepoint).
      tx.savepoint.run();
    } catch (err) {
      return fail(job, err);
    }
    try {
      const result = runKeyedWrite(conn, job.op, job.params, job.key);
      tx.release.run();
      return { seq: job.seq, ok: true, result };
    } catch (err) {
      if (conn.inTransaction) {
        tx.rollbackTo.run();
        tx.release.run();
      }
      return fail(job, err);
    }
  }
}

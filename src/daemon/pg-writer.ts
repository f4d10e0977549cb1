import { setTimeout as sleep } from "node:timers/promises";
import { SessionDBError } from "../errors.js";
import { jitterMs, type RetryPolicy } from "../operations/retry-policy.js";
import type { WriteOpName } from "../operation-catalogue.js";
import type { WriterCrashPoint, WriterStats } from "../protocol/control.js";
import type { DaemonWriter } from "./daemon-engine.js";
import { commitFigures, Window } from "./writer-client.js";
import { CommitHistograms } from "./commit-histograms.js";
import type { PgClient, PgPool } from "../pg/pg-connection.js";
import { isConnectionError, isRetryablePgError, lostDuringCommit, toPgSessionDBError } from "../pg/pg-errors.js";
import { KEY_PRUNE_EVERY_MS } from "../operations/idempotency-keys.js";
import { expiredWriteError, splitExpired } from "../operations/write-deadline.js";
import { prunePgKeys, runPgKeyedWrite } from "../pg/pg-keyed-write.js";
import { PgChangeNotes } from "../pg/pg-change-notes.js";
import { reconnectDelayMs } from "../pg/pg-backoff.js";
import { readOnly } from "../pg/pg-errors.js";

interface Job {
  op: WriteOpName;
  params: unknown;
  deadline: number;
  key: string | null;
  resolve(result: unknown): void;
  reject(err: SessionDBError): void;
}

type Outcome = { ok: true; result: unknown } | { ok: false; error: SessionDBError };

/** The longest a watch feed's start holds the batches (holdWhile): a LISTEN that hangs does not stall writes. */
const HOLD_MAX_MS = 2000;

export interface PgWriterOptions {
  maxBatch: number;
  retry: RetryPolicy;
  writable: boolean;
  /** How long a write's idempotency key is kept, at least, in hours. */
  keyRetentionHours: number;
}

/** Thrown inside a batch to roll it back and run it again (conflict, or the connection dropped before COMMIT). */
class RunAgain extends Error {
  /** The connection failure, when that is why (null: a conflict). */
  readonly connectionLost: unknown;

  constructor(connectionLost: unknown = null) {
    super("run the batch again");
    this.connectionLost = connectionLost;
  }
}

/**
 * The daemon's writer on PostgreSQL: everything queued goes into one transaction with a savepoint
 * per request (a failing request rolls back alone and gets its own error), then one COMMIT, and
 * only then are the requests answered. A serialization failure or deadlock with another host's
 * daemon, or a connection lost before COMMIT, rolls the batch back and runs it again: nothing of
 * it was acknowledged. A connection lost during COMMIT leaves the outcome unknown, and says so.
 */
export class PgWriter implements DaemonWriter {
  readonly #pool: PgPool;
  readonly #options: PgWriterOptions;
  #queue: Job[] = [];
  #inBatch = 0;
  #draining: Promise<void> | null = null;
  #closing: Promise<void> | null = null;
  #crashNext = false;
  #batches = 0;
  #writes = 0;
  #maxBatch = 0;
  #restarts = 0;
  readonly #commitMs = new Window();
  readonly #histograms = new CommitHistograms();
  readonly #transactionMs = new Window();
  /** When expired idempotency keys were last pruned (performance.now()). */
  #keysPrunedAt = -Infinity;
  /** Batches wait for it to settle before they start (holdWhile). */
  #hold: Promise<void> | null = null;

  constructor(pool: PgPool, options: PgWriterOptions) {
    this.#pool = pool;
    this.#options = options;
  }

  get queueDepth(): number {
    return this.#queue.length + this.#inBatch;
  }

  write(op: WriteOpName, params: unknown, deadline: number, key: string | null): Promise<unknown> {
    if (this.#closing !== null) return Promise.reject(new SessionDBError("CLOSED", "the daemon is shutting down"));
    if (!this.#options.writable) return Promise.reject(readOnly());
    return new Promise((resolve, reject) => {
      this.#queue.push({ op, params, deadline, key, resolve, reject });
      this.#draining ??= this.#drain();
    });
  }

  /**
   * Starts no batch until `until` settles (at most HOLD_MAX_MS): the watch feed LISTENs first, so
   * a write queued once a watch was asked for is heard by it (PgFeed), as the SQLite writer thread
   * turns its feed on before it takes the next batch.
   */
  holdWhile(until: Promise<unknown>): void {
    let timer: NodeJS.Timeout | undefined;
    const capped = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, HOLD_MAX_MS);
      until.then(() => resolve(), () => resolve());
    });
    const hold: Promise<void> = capped.finally(() => {
      clearTimeout(timer);
      if (this.#hold === hold) this.#hold = null;
    });
    this.#hold = hold;
  }

  crash(at: WriterCrashPoint): void {
    if (at !== "now") throw new SessionDBError("INVALID_ARGUMENT", `faultCrashWriter at ${at} stops a SQLite writer thread; this daemon serves PostgreSQL`);
    this.#crashNext = true;
  }

  maxPageCount(): void {
    throw new SessionDBError("INVALID_ARGUMENT", "faultMaxPageCount caps a SQLite file; this daemon serves PostgreSQL");
  }

  histograms(): ReturnType<CommitHistograms["snapshot"]> {
    return this.#histograms.snapshot();
  }

  stats(): WriterStats {
    return {
      queueDepth: this.queueDepth,
      batches: this.#batches,
      writes: this.#writes,
      meanBatchSize: this.#batches === 0 ? 0 : this.#writes / this.#batches,
      maxBatchSize: this.#maxBatch,
      // lockHeldMs: how long each transaction stayed open, BEGIN to COMMIT (PostgreSQL locks rows, not the database).
      ...commitFigures(this.#commitMs, this.#transactionMs),
      checkpoints: { passive: 0, truncate: 0, lastLogFrames: 0 },
      restarts: this.#restarts,
      thread: "running",
      idleStops: 0,
    };
  }

  close(): Promise<void> {
    this.#closing ??= (async () => {
      while (this.#draining !== null) await this.#draining;
      await this.#pool.end();
    })();
    return this.#closing;
  }

  async #drain(): Promise<void> {
    await new Promise((resolve) => setImmediate(resolve)); // everything that arrives in this turn joins the batch
    try {
      while (this.#queue.length > 0) {
        while (this.#hold !== null) await this.#hold;
        const batch = this.#queue.splice(0, this.#options.maxBatch);
        this.#inBatch = batch.length;
        await this.#commit(batch);
        this.#inBatch = 0;
      }
    } finally {
      this.#draining = null;
    }
  }

  /**
   * Commits one batch, running it again after a conflict or a lost connection, until each job is
   * answered. While PostgreSQL cannot be reached the writer connects again with a growing pause;
   * a job whose deadline passes meanwhile is answered UNAVAILABLE (not applied).
   */
  async #commit(batch: Job[]): Promise<void> {
    let jobs = batch;
    let unreachable: unknown = null; // why the last attempt failed, when PostgreSQL could not be reached
    let lostInARow = 0;
    for (let attempt = 1; ; attempt++) {
      jobs = answerExpired(jobs, unreachable);
      if (jobs.length === 0) return;
      try {
        const outcomes = await this.#runBatch(jobs);
        this.#batches++;
        this.#writes += jobs.length;
        this.#maxBatch = Math.max(this.#maxBatch, jobs.length);
        jobs.forEach((job, i) => {
          const outcome = outcomes[i]!;
          if (outcome.ok) job.resolve(outcome.result);
          else job.reject(outcome.error);
        });
        return;
      } catch (err) {
        if (!(err instanceof RunAgain)) {
          const error = toPgSessionDBError(err);
          for (const job of jobs) job.reject(error);
          return;
        }
        unreachable = err.connectionLost;
        lostInARow = unreachable === null ? 0 : lostInARow + 1;
        const pause =
          lostInARow > 0 ? reconnectDelayMs(lostInARow) : attempt < this.#options.retry.maxAttempts ? jitterMs(this.#options.retry) : 500;
        // Wake for the first deadline, so a job is answered at its deadline, not a pause later.
        await sleep(Math.max(0, Math.min(pause, Math.min(...jobs.map((job) => job.deadline)) - Date.now())));
      }
    }
  }

  async #runBatch(jobs: Job[]): Promise<Outcome[]> {
    let client: PgClient;
    try {
      client = await this.#pool.connect();
    } catch (err) {
      if (isConnectionError(err)) throw new RunAgain(err);
      throw err;
    }
    let committing = false;
    let broken = false;
    try {
      const began = performance.now();
      const outcomes: Outcome[] = [];
      // What the batch changed, told to every watcher of the database at its commit.
      const notes = new PgChangeNotes();
      // A savepoint isolates one request from the others; a request alone needs none (its failure
      // rolls back the batch, which is itself). Each savepoint statement shares its round trip
      // with BEGIN or with releasing the previous one: round trips are what a batch costs.
      if (jobs.length === 1) {
        await client.query("BEGIN");
        outcomes.push(await runRequest(client, jobs[0]!, false, notes));
      } else {
        await client.query(`BEGIN; SAVEPOINT ${SAVEPOINT}`);
        for (const [i, job] of jobs.entries()) {
          if (i > 0) await client.query(`RELEASE SAVEPOINT ${SAVEPOINT}; SAVEPOINT ${SAVEPOINT}`);
          outcomes.push(await runRequest(client, job, true, notes));
        }
      }
      // A lone request that failed left the transaction aborted (it rolls back at COMMIT).
      const healthy = jobs.length > 1 || outcomes[0]?.ok === true;
      if (healthy && began - this.#keysPrunedAt >= KEY_PRUNE_EVERY_MS) {
        // A bounded step, in this batch's transaction; after the requests, so it fails none of them.
        this.#keysPrunedAt = began;
        await client.query(`SAVEPOINT ${SAVEPOINT}`);
        try {
          await prunePgKeys(client, this.#options.keyRetentionHours);
          await client.query(`RELEASE SAVEPOINT ${SAVEPOINT}`);
        } catch (err) {
          if (isRetryablePgError(err) || isConnectionError(err)) throw err;
          await client.query(`ROLLBACK TO SAVEPOINT ${SAVEPOINT}`);
        }
      }
      if (healthy) await notes.send(client);
      if (this.#crashNext) {
        this.#crashNext = false;
        this.#restarts++;
        throw new SessionDBError("INTERNAL", "the writer failed before this write was committed (fault injection); it was not applied");
      }
      committing = true;
      const commitStarted = performance.now();
      await client.query("COMMIT");
      const done = performance.now();
      this.#commitMs.add(done - commitStarted);
      this.#histograms.record(jobs.length, done - commitStarted);
      this.#transactionMs.add(done - began);
      return outcomes;
    } catch (err) {
      if (committing && isConnectionError(err)) {
        broken = true;
        throw lostDuringCommit(err);
      }
      await client.query("ROLLBACK").catch(() => {
        broken = true;
      });
      if (isConnectionError(err)) {
        broken = true;
        throw new RunAgain(err);
      }
      if (isRetryablePgError(err)) throw new RunAgain();
      throw err;
    } finally {
      client.release(broken);
    }
  }
}

const SAVEPOINT = "sessiondb_request";

/**
 * One request. Inside the savepoint set just before it (`isolated`), its failure is its own: rolled
 * back to the savepoint, which stays set for the next request. Alone in its batch, its failure
 * leaves the transaction to roll back at COMMIT. A conflict or lost connection is the batch's.
 */
async function runRequest(client: PgClient, job: Job, isolated: boolean, notes: PgChangeNotes): Promise<Outcome> {
  try {
    return { ok: true, result: await runPgKeyedWrite(client, job.op, job.params, job.key, notes) };
  } catch (err) {
    if (isRetryablePgError(err) || isConnectionError(err)) throw err;
    if (isolated) await client.query(`ROLLBACK TO SAVEPOINT ${SAVEPOINT}`);
    return { ok: false, error: toPgSessionDBError(err) };
  }
}

/**
 * Jobs whose deadline passed before their transaction began are answered, not applied: TIMEOUT,
 * or UNAVAILABLE when PostgreSQL could not be reached (`unreachable`: the last failure); the rest go on.
 */
function answerExpired(jobs: Job[], unreachable: unknown): Job[] {
  const { live, expired } = splitExpired(jobs);
  for (const job of expired) job.reject(unreachable === null ? expiredWriteError(job.op) : notApplied(toPgSessionDBError(unreachable)));
  return live;
}

/** The daemon could not reach PostgreSQL before the write's deadline. */
function notApplied(cause: SessionDBError): SessionDBError {
  return new SessionDBError("UNAVAILABLE", `${cause.message}; the write was not applied (the daemon kept trying to reconnect until its deadline)`, { cause });
}

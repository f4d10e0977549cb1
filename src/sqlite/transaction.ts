import { isBusyError, SessionDBError, toSessionDBError } from "../errors.js";
import type { Connection } from "./connection.js";

/** The jittered retry of SPEC §4, resolved. */
export interface RetryPolicy {
  /** How long a write keeps trying for the lock, in ms, before it fails with BUSY. */
  readonly budgetMs: number;
  /** An optional cap on the attempts within the budget (Infinity: none). */
  readonly maxAttempts: number;
  readonly minDelayMs: number;
  readonly maxDelayMs: number;
}

/**
 * 20 s: the reference's 15 attempts (~1.3 s) proved too short in the field, and its successor
 * waits 20 s for ordinary writes.
 */
export const DEFAULT_RETRY: RetryPolicy = { budgetMs: 20_000, maxAttempts: Infinity, minDelayMs: 20, maxDelayMs: 150 };

/** The jitter keeps its range this long; past it the range grows with the wait, up to 8 times. */
const JITTER_STEADY_MS = 2000;
const MAX_JITTER_GROWTH = 8;

/**
 * A uniformly random pause, so that writers who lost the lock together do not retry together;
 * after a long wait the pauses grow, so a crowd of waiters polls a long-held lock less often.
 */
export function jitterMs(policy: RetryPolicy, waitedMs = 0): number {
  const growth = waitedMs <= JITTER_STEADY_MS ? 1 : Math.min(MAX_JITTER_GROWTH, waitedMs / JITTER_STEADY_MS);
  return (policy.minDelayMs + Math.random() * (policy.maxDelayMs - policy.minDelayMs)) * growth;
}

/** The pause before attempt `attempt + 1`, or null once the budget (or the attempts) are spent. */
export function retryDelayMs(policy: RetryPolicy, attempt: number, startedAt: number): number | null {
  const waited = performance.now() - startedAt;
  if (attempt >= policy.maxAttempts || waited >= policy.budgetMs) return null;
  return Math.min(jitterMs(policy, waited), policy.budgetMs - waited);
}

/**
 * Runs `fn` inside `BEGIN IMMEDIATE … COMMIT`: the write lock is taken up front, so a busy
 * database shows at BEGIN and never halfway through a write. Any failure rolls back.
 */
export function inWriteTransaction<T>(db: Connection, fn: () => T): T {
  db.exec("BEGIN IMMEDIATE");
  try {
    const result = fn();
    db.exec("COMMIT");
    return result;
  } catch (err) {
    if (db.inTransaction) db.exec("ROLLBACK");
    throw err;
  }
}

/**
 * Runs the reads of `fn` on one snapshot of the file (a deferred transaction, unless the caller
 * is in one already): a result built from several statements then matches a single moment.
 */
export function inReadSnapshot<T>(db: Connection, fn: () => T): T {
  if (db.inTransaction) return fn();
  db.exec("BEGIN");
  try {
    return fn();
  } finally {
    if (db.inTransaction) db.exec("COMMIT");
  }
}

export function busyFailure(attempts: number, startedAt: number, cause: unknown): SessionDBError {
  const waited = Math.round(performance.now() - startedAt);
  return new SessionDBError(
    "BUSY",
    `the database stayed locked by another writer for ${waited} ms (${attempts} attempts; the retry budget is spent)`,
    { cause },
  );
}

const sleeper = new Int32Array(new SharedArrayBuffer(4));

/**
 * The jittered retry for callers that may block their thread (opening a file, the writer
 * worker). Only busy/locked errors are retried; anything else fails at once.
 */
export function retryBusySync<T>(policy: RetryPolicy, fn: () => T): T {
  const startedAt = performance.now();
  for (let attempt = 1; ; attempt++) {
    try {
      return fn();
    } catch (err) {
      if (!isBusyError(err)) throw toSessionDBError(err);
      const delay = retryDelayMs(policy, attempt, startedAt);
      if (delay === null) throw busyFailure(attempt, startedAt, err);
      Atomics.wait(sleeper, 0, 0, delay);
    }
  }
}

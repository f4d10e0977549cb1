import { isBusyError, SessionDBError, toSessionDBError } from "../errors.js";
import type { Connection } from "./connection.js";

/** The jittered retry of SPEC §4, resolved. */
export interface RetryPolicy {
  readonly maxAttempts: number;
  readonly minDelayMs: number;
  readonly maxDelayMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { maxAttempts: 15, minDelayMs: 20, maxDelayMs: 150 };

/** A uniformly random pause, so that writers who lost the lock together do not retry together. */
export function jitterMs(policy: RetryPolicy): number {
  return policy.minDelayMs + Math.random() * (policy.maxDelayMs - policy.minDelayMs);
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

export function busyFailure(attempts: number, cause: unknown): SessionDBError {
  return new SessionDBError(
    "BUSY",
    `the database stayed locked by another writer through ${attempts} attempts`,
    { cause },
  );
}

const sleeper = new Int32Array(new SharedArrayBuffer(4));

/**
 * The jittered retry for callers that may block their thread (opening a file, the writer
 * worker). Only busy/locked errors are retried; anything else fails at once.
 */
export function retryBusySync<T>(policy: RetryPolicy, fn: () => T): T {
  for (let attempt = 1; ; attempt++) {
    try {
      return fn();
    } catch (err) {
      if (!isBusyError(err)) throw toSessionDBError(err);
      if (attempt >= policy.maxAttempts) throw busyFailure(attempt, err);
      Atomics.wait(sleeper, 0, 0, jitterMs(policy));
    }
  }
}

import { isBusyError, SessionDBError, toSessionDBError } from "../errors.js";
import type { Connection } from "./connection.js";

import { retryDelayMs, type RetryPolicy } from "../operations/retry-policy.js";

export { DEFAULT_RETRY, jitterMs, retryDelayMs, type RetryPolicy } from "../operations/retry-policy.js";

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

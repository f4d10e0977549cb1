/**
 * How the writer thread waits. It is the daemon's only writer and its waits are its own: a busy
 * file is retried without limit (a queued request never fails for it), and a pause blocks the
 * thread, nothing else runs on it meanwhile.
 */
import type { RetryPolicy } from "../src/sqlite/transaction.js";

/** The writer's own wait: short SQLite busy waits, retried without limit (never fails a request). */
export const LOCK_RETRY: RetryPolicy = { budgetMs: Infinity, maxAttempts: Infinity, minDelayMs: 1, maxDelayMs: 10 };
/** Opening and migrating the file wait for other processes too, but not forever. */
export const OPEN_RETRY: RetryPolicy = { ...LOCK_RETRY, maxAttempts: 1000 };
export const LOCK_BUSY_TIMEOUT_MS = 100;

const sleeper = new Int32Array(new SharedArrayBuffer(4));

export function pause(ms: number): void {
  if (ms > 0) Atomics.wait(sleeper, 0, 0, ms);
}

import { setTimeout as sleep } from "node:timers/promises";
import { SessionDBError } from "../errors.js";
import { retryDelayMs, type RetryPolicy } from "../operations/retry-policy.js";
import type { PgClient, PgPool } from "./pg-connection.js";
import { isConnectionError, isRetryablePgError, lostBeforeCommit, lostDuringCommit, toPgSessionDBError } from "./pg-errors.js";

/**
 * Runs `fn` in one transaction on a connection of the pool. A serialization failure or deadlock
 * (another host's daemon wrote the same rows) rolls back and runs the whole transaction again
 * after a jittered pause, within the retry policy (then BUSY). A connection the server dropped
 * fails the call, coded: UNAVAILABLE before COMMIT (nothing was applied; the next call connects
 * anew), OUTCOME_UNKNOWN during it (it may have committed). Any other failure rolls back and fails.
 */
export async function inPgTransaction<T>(pool: PgPool, retry: RetryPolicy, fn: (client: PgClient) => Promise<T>): Promise<T> {
  const startedAt = performance.now();
  for (let attempt = 1; ; attempt++) {
    const client = await pool.connect().catch((err: unknown) => {
      throw toPgSessionDBError(err);
    });
    let committing = false;
    let broken = false;
    let pause: number | null;
    try {
      await client.query("BEGIN");
      const result = await fn(client);
      committing = true;
      await client.query("COMMIT");
      return result;
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
        throw lostBeforeCommit(err);
      }
      if (!isRetryablePgError(err)) throw toPgSessionDBError(err);
      pause = retryDelayMs(retry, attempt, startedAt);
      if (pause === null) {
        throw new SessionDBError("BUSY", `the write conflicted with other writers through ${attempt} attempts`, { cause: err });
      }
    } finally {
      client.release(broken);
    }
    await sleep(pause);
  }
}

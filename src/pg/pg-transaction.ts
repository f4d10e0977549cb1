import { setTimeout as sleep } from "node:timers/promises";
import { SessionDBError } from "../errors.js";
import { jitterMs, type RetryPolicy } from "../engine/transaction.js";
import type { PgClient, PgPool } from "./pg-connection.js";
import { isRetryablePgError, toPgSessionDBError } from "./pg-errors.js";

/**
 * Runs `fn` in one transaction on a connection of the pool. A serialization failure or deadlock
 * (another host's daemon wrote the same rows) rolls back and runs the whole transaction again
 * after a jittered pause, within the retry policy; any other failure rolls back and fails.
 */
export async function inPgTransaction<T>(pool: PgPool, retry: RetryPolicy, fn: (client: PgClient) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const client = await pool.connect().catch((err: unknown) => {
      throw toPgSessionDBError(err);
    });
    let broken = false;
    try {
      await client.query("BEGIN");
      const result = await fn(client);
      await client.query("COMMIT");
      return result;
    } catch (err) {
      await client.query("ROLLBACK").catch(() => {
        broken = true;
      });
      if (!isRetryablePgError(err)) throw toPgSessionDBError(err);
      if (attempt >= retry.maxAttempts) {
        throw new SessionDBError("BUSY", `the write conflicted with other writers through ${attempt} attempts`, { cause: err });
      }
    } finally {
      client.release(broken);
    }
    await sleep(jitterMs(retry));
  }
}

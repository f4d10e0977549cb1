/**
 * Reads on one PostgreSQL snapshot (issue 23 item 3): a `REPEATABLE READ READ ONLY` transaction
 * on one connection, so a result built from several statements (a session's counters and its
 * messages; every page of an export) matches one moment. The cost of a long one is the server's:
 * while it is open, VACUUM keeps the row versions it may still see.
 */
import type { PgClient, PgPool, PgQueryable } from "./pg-connection.js";
import { toPgSessionDBError } from "./pg-errors.js";

const BEGIN_SNAPSHOT = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY";

/** A pool (a pooled client has `connect` too, but no counts). */
function isPool(db: PgQueryable): db is PgPool {
  return typeof (db as Partial<PgPool>).idleCount === "number";
}

/** Runs `fn` on one snapshot: on a connection of the pool in a read-only transaction, or (a connection already in a transaction) as it is. */
export async function inPgReadSnapshot<T>(db: PgQueryable, fn: (db: PgQueryable) => Promise<T>): Promise<T> {
  if (!isPool(db)) return fn(db);
  const snapshot = await PgSnapshot.open(db);
  try {
    return await fn(snapshot.client);
  } finally {
    await snapshot.close();
  }
}

/** A connection of the pool held in a read-only REPEATABLE READ transaction until `close`. */
export class PgSnapshot {
  readonly client: PgClient;
  #closed = false;

  private constructor(client: PgClient) {
    this.client = client;
  }

  /** Takes the snapshot now (PostgreSQL takes it at the transaction's first query). */
  static async open(pool: PgPool): Promise<PgSnapshot> {
    const client = await pool.connect().catch((err: unknown) => {
      throw toPgSessionDBError(err);
    });
    try {
      await client.query(BEGIN_SNAPSHOT);
      await client.query("SELECT 1 FROM sessions LIMIT 1");
    } catch (err) {
      client.release(true);
      throw toPgSessionDBError(err);
    }
    return new PgSnapshot(client);
  }

  /** Whether `close` was called. */
  get closed(): boolean {
    return this.#closed;
  }

  /** Ends the transaction and gives the connection back (dropped if it failed). Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    let broken = false;
    await this.client.query("COMMIT").catch(() => (broken = true));
    this.client.release(broken);
  }
}

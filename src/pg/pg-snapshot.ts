/**
 * Reads on one PostgreSQL snapshot (issue 23 item 3): a `REPEATABLE READ READ ONLY` transaction
 * on one connection, so a result built from several statements (a session's counters and its
 * messages; every page of an export) matches one moment. The cost of a long one is the server's:
 * while it is open, VACUUM keeps the row versions it may still see.
 */
import { SessionDBError } from "../errors.js";
import type { Page } from "../sqlite/define-operation.js";
import type { OpName, StreamOpName } from "../operation-catalogue.js";
import type { DaemonSnapshots, ReadSnapshot, SnapshotStats } from "../daemon/daemon-engine.js";
import type { PgClient, PgPool, PgQueryable } from "./pg-connection.js";
import { toPgSessionDBError } from "./pg-errors.js";
import { runPgPage } from "./pg-operations.js";

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

  async page(op: OpName, params: unknown, cursor: unknown): Promise<Page<unknown, unknown>> {
    if (this.#closed) throw new SessionDBError("CLOSED", `${op}: its snapshot was closed`);
    return runPgPage(this.client, op, params, cursor).catch((err: unknown) => Promise.reject(toPgSessionDBError(err)));
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

/**
 * The PostgreSQL daemon's snapshots for streamed reads: connections of a pool of their own (so a
 * slow export never takes a reader connection from point reads), at most `max` at once; further
 * exports wait for one in the pool.
 */
export class PgSnapshots implements DaemonSnapshots {
  readonly #pool: PgPool;
  readonly #open = new Set<PgSnapshot>();
  #pagesRead = 0;
  #closed = false;

  constructor(pool: PgPool) {
    this.#pool = pool;
  }

  async open(op: StreamOpName, params: unknown, deadline: number): Promise<ReadSnapshot> {
    if (this.#closed) throw new SessionDBError("UNAVAILABLE", "the daemon is shutting down");
    if (Date.now() >= deadline) throw new SessionDBError("TIMEOUT", `${op} was not started before its deadline`);
    const snapshot = await PgSnapshot.open(this.#pool);
    this.#open.add(snapshot);
    return {
      page: async (cursor, pageDeadline) => {
        if (Date.now() >= pageDeadline) throw new SessionDBError("TIMEOUT", `${op}: its next page was not started before its deadline`);
        const page = await snapshot.page(op, params, cursor);
        this.#pagesRead++;
        return page;
      },
      close: async () => {
        this.#open.delete(snapshot);
        await snapshot.close();
      },
    };
  }

  stats(): SnapshotStats {
    return { open: this.#open.size, pagesRead: this.#pagesRead };
  }

  async close(): Promise<void> {
    this.#closed = true;
    await Promise.all([...this.#open].map((s) => s.close()));
    this.#open.clear();
    await this.#pool.end().catch(() => undefined);
  }
}

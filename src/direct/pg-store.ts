import { SessionDBError } from "../errors.js";
import type { ResolvedOptions } from "../options.js";
import { parseOperation } from "../sqlite/operations.js";
import type { CallOpName, ParamsOf, ResultOf, StreamOpName, WriteOpName } from "../operation-catalogue.js";
import { KEY_PRUNE_EVERY_MS } from "../operations/idempotency-keys.js";
import { parseCall, WriteQueue } from "./write-queue.js";
import { Store } from "../store.js";
import { openPgPool, type PgClient, type PgPool } from "../pg/pg-connection.js";
import { prunePgKeys, runPgKeyedWrite } from "../pg/pg-keyed-write.js";
import { readOnly, toPgSessionDBError } from "../pg/pg-errors.js";
import { runPgOperation } from "../pg/pg-operations.js";
import { PgSnapshot } from "../pg/pg-snapshot.js";
import { snapshotPage } from "../pg/pg-snapshot-page.js";
import { openPgDatabase } from "../pg/pg-open.js";
import { inPgTransaction } from "../pg/pg-transaction.js";

/** Connections of one direct-mode handle: a few reads in parallel beside the writes, which go one at a time. */
const DIRECT_POOL_SIZE = 4;

/**
 * Direct mode on a PostgreSQL URL: a small pool of connections in this process. Every write is
 * one transaction, retried on serialization failure and deadlock; writes from one handle keep
 * their order; reads run at once on their own connections.
 */
export class PgStore extends Store {
  readonly mode = "direct" as const;
  readonly engine = "postgres" as const;
  readonly daemon = null;
  readonly #options: ResolvedOptions;
  readonly #pool: PgPool;
  readonly #writable: boolean;
  readonly #writes = new WriteQueue();
  #closed: Promise<void> | null = null;
  #keysPrunedAt = -Infinity;

  private constructor(pool: PgPool, options: ResolvedOptions, writable: boolean) {
    super(options.files);
    this.#pool = pool;
    this.#options = options;
    this.#writable = writable;
  }

  /** Connects, and creates or migrates the schema. */
  static async open(options: ResolvedOptions): Promise<PgStore> {
    const pool = await openPgPool(options.path, { max: DIRECT_POOL_SIZE, applicationName: "sessiondb direct" });
    try {
      return new PgStore(pool, options, await openPgDatabase(pool));
    } catch (err) {
      await pool.end().catch(() => undefined);
      throw toPgSessionDBError(err);
    }
  }

  protected async call<K extends CallOpName>(name: K, args: ParamsOf<K>, key: string | null): Promise<ResultOf<K>> {
    this.#checkOpen();
    const { kind, params } = parseCall(name, args);
    // The engine's table returns what the catalogue says this operation returns.
    if (kind === "read") {
      return runPgOperation(this.#pool, name, params).then(
        (result) => result as ResultOf<K>,
        (err: unknown) => Promise.reject(toPgSessionDBError(err)),
      );
    }
    if (!this.#writable) throw readOnly();
    return this.#writes.run(
      async () =>
        (await inPgTransaction(this.#pool, this.#options.retry, async (client) => {
          if (key !== null) await this.#pruneKeys(client);
          return runPgKeyedWrite(client, name as WriteOpName, params, key);
        })) as ResultOf<K>,
    );
  }

  /** Expired idempotency keys, a bounded step at most once a minute, in a keyed write's transaction. */
  async #pruneKeys(client: PgClient): Promise<void> {
    const at = performance.now();
    if (at - this.#keysPrunedAt < KEY_PRUNE_EVERY_MS) return;
    this.#keysPrunedAt = at;
    await prunePgKeys(client, this.#options.keyRetentionHours);
  }

  /** Every page on one snapshot: a connection of the pool held in a read-only transaction until the end. */
  protected async *stream<K extends StreamOpName>(name: K, args: ParamsOf<K>): AsyncIterable<ResultOf<K>> {
    const params = parseOperation(name, args);
    this.#checkOpen();
    const snapshot = await PgSnapshot.open(this.#pool);
    try {
      let cursor: unknown = null;
      do {
        this.#checkOpen();
        const page = await snapshotPage(snapshot, name, params, cursor);
        yield* page.items as Array<ResultOf<K>>;
        cursor = page.next;
      } while (cursor !== null);
    } finally {
      await snapshot.close();
    }
  }

  close(): Promise<void> {
    this.#closed ??= this.#writes.idle().then(() => this.#pool.end());
    return this.#closed;
  }

  #checkOpen(): void {
    if (this.#closed !== null) throw new SessionDBError("CLOSED", "this SessionDB handle is closed");
  }
}

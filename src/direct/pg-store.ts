import { setTimeout as sleep } from "node:timers/promises";
import { SessionDBError, toSessionDBError } from "../errors.js";
import type { ResolvedOptions } from "../options.js";
import { parseOperation } from "../operations/operation-params.js";
import type { CallOpName, ParamsOf, ResultOf, StreamOpName, WriteOpName } from "../operation-catalogue.js";
import { KEY_PRUNE_EVERY_MS } from "../operations/idempotency-keys.js";
import { parseCall, WriteQueue } from "./write-queue.js";
import type { WatchFilter } from "../operations/watch-filter.js";
import { Store, type SubscribeOptions } from "../store.js";
import type { WatchEvent } from "../watch-types.js";
import { openPgPool, type PgClient, type PgPool } from "../pg/pg-connection.js";
import { prunePgKeys, runPgKeyedWrite } from "../pg/pg-keyed-write.js";
import { reconnectDelayMs } from "../pg/pg-backoff.js";
import { PgChangeNotes } from "../pg/pg-change-notes.js";
import { PgChangeFeed } from "../pg/pg-change-feed.js";
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
 * their order; reads run at once on their own connections. A keyed write (every write, unless the
 * caller turned `idempotencyKeys` off) whose connection is lost — before its COMMIT, during it, or
 * the server not reachable — is sent again with its key until its deadline (`requestTimeoutMs`),
 * as the daemon clients resend: applied once, whether or not the lost attempt committed.
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
  #feed: Promise<PgChangeFeed> | null = null;

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
    const deadline = performance.now() + this.#options.requestTimeoutMs;
    // The write's turn in the queue covers its resends: the handle's writes keep their order.
    return this.#writes.run(async () => (await this.#keyedWrite(name as WriteOpName, params, key, deadline)) as ResultOf<K>);
  }

  protected override get autoKeys(): boolean {
    return this.#options.idempotencyKeys;
  }

  /**
   * One write, sent again with its key after a lost connection (UNAVAILABLE: not applied, or no
   * connection; OUTCOME_UNKNOWN: lost during COMMIT) until `deadline`: the key makes a committed
   * attempt answer its first result. Past the deadline the caller gets OUTCOME_UNKNOWN if an
   * attempt may have committed, else the last UNAVAILABLE. A write without a key is sent once.
   */
  async #keyedWrite(name: WriteOpName, params: unknown, key: string | null, deadline: number): Promise<unknown> {
    let mayHaveCommitted = false;
    for (let lost = 1; ; lost++) {
      try {
        return await inPgTransaction(this.#pool, this.#options.retry, async (client) => {
          if (key !== null) await this.#pruneKeys(client);
          // Told to every watcher of the database at the commit (pg/pg-change-notes.ts).
          const notes = new PgChangeNotes();
          const result = await runPgKeyedWrite(client, name, params, key, notes);
          await notes.send(client);
          return result;
        });
      } catch (err) {
        const code = toSessionDBError(err).code;
        if (key === null || (code !== "UNAVAILABLE" && code !== "OUTCOME_UNKNOWN")) throw err;
        mayHaveCommitted ||= code === "OUTCOME_UNKNOWN";
        const left = deadline - performance.now();
        if (left <= 0) {
          if (!mayHaveCommitted) throw err;
          throw new SessionDBError(
            "OUTCOME_UNKNOWN",
            `${name} was sent with its idempotency key until its deadline and PostgreSQL never confirmed it; ` +
              "sending it again with the same key applies it at most once",
            { cause: err },
          );
        }
        await sleep(Math.min(left, reconnectDelayMs(lost)));
      }
    }
  }

  /** Expired idempotency keys, a bounded step at most once a minute, in a keyed write's transaction. */
  async #pruneKeys(client: PgClient): Promise<void> {
    const at = performance.now();
    if (at - this.#keysPrunedAt < KEY_PRUNE_EVERY_MS) return;
    this.#keysPrunedAt = at;
    await prunePgKeys(client, this.#options.keyRetentionHours);
  }

  /**
   * The handle's watches share one feed (pg/pg-change-feed.ts): a connection of its own that
   * LISTENs for what every writer of the database notifies; opened at the first watch, again
   * after it failed, closed with the handle.
   */
  protected async *subscribe(filter: WatchFilter, opts: SubscribeOptions): AsyncIterable<WatchEvent> {
    this.#checkOpen();
    this.#feed = this.#feed?.then((feed) => (feed.live ? feed : this.#openFeed()), () => this.#openFeed()) ?? this.#openFeed();
    const feed = await this.#feed;
    this.#checkOpen();
    yield* feed.subscribe(filter, opts.signal, opts.resyncFirst);
  }

  #openFeed(): Promise<PgChangeFeed> {
    return PgChangeFeed.open(this.#options.path, this.#pool, "sessiondb direct watch");
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
    const feed = this.#feed;
    this.#closed ??= Promise.all([this.#writes.idle(), feed?.then((f) => f.close(), () => undefined)]).then(() => this.#pool.end());
    return this.#closed;
  }

  #checkOpen(): void {
    if (this.#closed !== null) throw new SessionDBError("CLOSED", "this SessionDB handle is closed");
  }
}

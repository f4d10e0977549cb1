import { dirname } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { isBusyError, SessionDBError, toSessionDBError } from "../errors.js";
import type { ResolvedOptions } from "../options.js";
import type { Connection } from "../sqlite/connection.js";
import { newerSchemaError } from "../sqlite/database-file.js";
import { openDatabase } from "../sqlite/open-database.js";
import { makePrivateDir } from "../sqlite/private-files.js";
import { catchUpCjkIndex } from "../sqlite/cjk-index.js";
import { EXPORT_WAL_GROWTH_LIMIT, ExportSnapshot, walHeldError } from "../sqlite/export-snapshot.js";
import { parseOperation } from "../operations/operation-params.js";
import { runOperation } from "../sqlite/operations.js";
import type { CallOpName, ParamsOf, ResultOf, StreamOpName, WriteOpName } from "../operation-catalogue.js";
import { KEY_PRUNE_EVERY_MS } from "../operations/idempotency-keys.js";
import { pruneKeys, runKeyedWrite } from "../sqlite/keyed-write.js";
import { busyFailure, inWriteTransaction, retryDelayMs } from "../sqlite/transaction.js";
import type { WatchFilter } from "../operations/watch-filter.js";
import { touchedSession } from "../operations/touched-sessions.js";
import { Store, type SubscribeOptions } from "../store.js";
import type { WatchEvent } from "../watch-types.js";
import { PollingWatch, tellCommitted } from "./polling-watch.js";
import { parseCall, WriteQueue } from "./write-queue.js";

/** How often an export's snapshot is checked for holding the WAL back. */
const SNAPSHOT_WATCH_MS = 1000;

/**
 * Direct mode (SPEC §4): the file opened in this process. Every write is `BEGIN IMMEDIATE …
 * COMMIT`; a busy database is retried after a random 20–150 ms pause (growing after 2 s) until
 * the retry budget (default 20 s) is spent, then fails with BUSY. Writes from one handle keep
 * their order; reads run at once.
 */
export class DirectStore extends Store {
  readonly mode = "direct" as const;
  readonly engine = "sqlite" as const;
  readonly daemon = null;
  readonly #options: ResolvedOptions;
  #db: Connection | null;
  /**
   * Why every write fails, when the connection is read-only: a newer Hermes made the file
   * (SCHEMA), or it is not this user's to write (PERMISSION, sqlite/file-ownership.ts).
   */
  readonly #writeRefusal: ((op: string) => SessionDBError) | null;
  #writesSinceCheckpoint = 0;
  /** When expired keys were last pruned (performance.now(); 0: never). */
  #prunedKeysAt = 0;
  readonly #writes = new WriteQueue();
  #closed: Promise<void> | null = null;
  /** The snapshots of exports in progress: closing the handle ends them. */
  readonly #snapshots = new Set<ExportSnapshot>();
  /** The watches being iterated: closing the handle ends them. */
  readonly #watches = new Set<PollingWatch>();

  private constructor(db: Connection, options: ResolvedOptions, writeRefusal: ((op: string) => SessionDBError) | null) {
    super(options.files);
    this.#db = db;
    this.#options = options;
    this.#writeRefusal = writeRefusal;
  }

  /**
   * Opens the file: initialises a missing or empty one (unless `create` is false), migrates an
   * older one, opens a newer one read-only and refuses anything else untouched.
   */
  static open(options: ResolvedOptions): DirectStore {
    try {
      if (options.create) makePrivateDir(dirname(options.path));
      const { db, newerVersion, notOurs } = openDatabase(options.path, {
        busyTimeoutMs: options.busyTimeoutMs,
        retry: options.retry,
        create: options.create,
        readOnlyIfNotOurs: true,
      });
      const refusal = notOurs !== null
        ? (op: string) => new SessionDBError("PERMISSION", `${op} refused: ${notOurs.message}`)
        : newerVersion !== null
          ? (op: string) => newerSchemaError(options.path, newerVersion, op)
          : null;
      return new DirectStore(db, options, refusal);
    } catch (err) {
      throw toSessionDBError(err);
    }
  }

  protected async call<K extends CallOpName>(name: K, args: ParamsOf<K>, key: string | null): Promise<ResultOf<K>> {
    const db = this.#connection();
    const { kind, params } = parseCall(name, args);
    if (kind === "write" && this.#writeRefusal !== null) throw this.#writeRefusal(name);
    // The engine's table returns what the catalogue says this operation returns.
    if (kind === "read") return this.#withRetry(() => runOperation(db, name, params) as ResultOf<K>, false);
    const write = () => {
      if (key !== null) this.#pruneKeys(db);
      return runKeyedWrite(db, name as WriteOpName, params, key) as ResultOf<K>;
    };
    const committed = () => tellCommitted(this.#options.path, touchedSession(name as WriteOpName, params));
    return this.#writes.run(() => this.#withRetry(write, true, committed));
  }

  /** Expired idempotency keys, a bounded step at most once a minute, in a keyed write's transaction. */
  #pruneKeys(db: Connection): void {
    const at = performance.now();
    if (at - this.#prunedKeysAt < KEY_PRUNE_EVERY_MS && this.#prunedKeysAt !== 0) return;
    this.#prunedKeysAt = at;
    pruneKeys(db, this.#options.keyRetentionHours);
  }

  /**
   * Every page on one snapshot, on a connection of its own (the handle's own one must stay free
   * for writes). Ended, so the WAL can be checkpointed, once it has grown by
   * EXPORT_WAL_GROWTH_LIMIT meanwhile.
   */
  protected async *stream<K extends StreamOpName>(name: K, args: ParamsOf<K>): AsyncIterable<ResultOf<K>> {
    const params = parseOperation(name, args);
    this.#connection();
    const snapshot = ExportSnapshot.open(this.#options.path, this.#options.busyTimeoutMs);
    this.#snapshots.add(snapshot);
    const watch = setInterval(() => {
      const growth = snapshot.walGrowth();
      if (growth > EXPORT_WAL_GROWTH_LIMIT) snapshot.end(walHeldError(`the WAL grew by ${(growth / 1048576).toFixed(1)} MiB`, EXPORT_WAL_GROWTH_LIMIT));
    }, SNAPSHOT_WATCH_MS);
    watch.unref();
    try {
      let cursor: unknown = null;
      do {
        this.#connection();
        const page = snapshot.page(name, params, cursor);
        yield* page.items as Array<ResultOf<K>>;
        cursor = page.next;
      } while (cursor !== null);
    } finally {
      clearInterval(watch);
      this.#snapshots.delete(snapshot);
      snapshot.close();
    }
  }

  /** A connection of the watch's own, polled (polling-watch.ts); the handle's one stays free for writes. */
  protected async *subscribe(filter: WatchFilter, opts: SubscribeOptions): AsyncIterable<WatchEvent> {
    this.#connection();
    const watch = PollingWatch.open(this.#options.path, this.#options.busyTimeoutMs, filter);
    this.#watches.add(watch);
    try {
      if (opts.resyncFirst) yield { type: "resync", afterMessageId: watch.cursor };
      yield* watch.events(opts.signal);
    } finally {
      this.#watches.delete(watch);
      watch.stop();
    }
  }

  close(): Promise<void> {
    for (const watch of this.#watches) watch.stop();
    for (const snapshot of this.#snapshots) snapshot.end(new SessionDBError("CLOSED", "this SessionDB handle was closed during the export"));
    this.#closed ??= this.#writes.idle().then(() => {
      const db = this.#db;
      this.#db = null;
      if (db === null) return;
      if (this.#writeRefusal === null) checkpoint(db);
      db.close();
    });
    return this.#closed;
  }

  #connection(): Connection {
    if (this.#db === null || this.#closed !== null) throw new SessionDBError("CLOSED", "this SessionDB handle is closed");
    return this.#db;
  }

  /** One attempt per turn of the event loop: other work goes on while a writer waits for its turn. */
  /** `committed`: a write's, run just after its COMMIT (before anything else can write). */
  async #withRetry<T>(fn: () => T, isWrite: boolean, committed?: () => void): Promise<T> {
    const { retry } = this.#options;
    const startedAt = performance.now();
    for (let attempt = 1; ; attempt++) {
      const db = this.#db;
      if (db === null) throw new SessionDBError("CLOSED", "this SessionDB handle is closed");
      try {
        const result = isWrite ? inWriteTransaction(db, () => withCjkCatchUp(db, fn)) : fn();
        if (isWrite) {
          committed?.();
          this.#afterWrite(db);
        }
        return result;
      } catch (err) {
        if (!isBusyError(err)) throw toSessionDBError(err);
        const delay = retryDelayMs(retry, attempt, startedAt);
        if (delay === null) throw busyFailure(attempt, startedAt, err);
        await sleep(delay);
      }
    }
  }

  #afterWrite(db: Connection): void {
    const every = this.#options.checkpointEveryNWrites;
    if (every > 0 && ++this.#writesSinceCheckpoint >= every) {
      this.#writesSinceCheckpoint = 0;
      checkpoint(db);
    }
  }
}

/**
 * A write that also brings the CJK index up to date when the file has one (a daemon made it):
 * a few statements, and searches then scan fewer messages above its mark.
 */
function withCjkCatchUp<T>(db: Connection, fn: () => T): T {
  const result = fn();
  catchUpCjkIndex(db);
  return result;
}

/** Best effort: a PASSIVE checkpoint never waits and never fails a caller. */
function checkpoint(db: Connection): void {
  try {
    db.pragma("wal_checkpoint(PASSIVE)");
  } catch {
    // Another connection may hold what it needs; the next checkpoint catches up.
  }
}

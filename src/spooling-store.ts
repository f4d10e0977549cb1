import { trimUndefined } from "./client/request-frame.js";
import { argsForWire } from "./client/wire-args.js";
import { SessionDBError, SpooledError, toSessionDBError } from "./errors.js";
import { OPERATIONS, type CallOpName, type ParamsOf, type ResultOf, type StreamOpName, type WriteOpName } from "./operation-catalogue.js";
import { autoKey } from "./operations/idempotency-keys.js";
import type { ResolvedOptions, ResolvedSpool } from "./options.js";
import type { DaemonControl } from "./daemon-control.js";
import type { Engine, Mode, SessionDB } from "./session-db.js";
import { SpoolFile } from "./spool/spool-file.js";
import { applyBy, isSpooledOp, replaySpool, SPOOLED_CODES, type ReplayResult } from "./spool/spool-replay.js";
import type { WatchFilter } from "./operations/watch-filter.js";
import { Store, type SubscribeOptions } from "./store.js";
import type { WatchEvent } from "./watch-types.js";

/**
 * A handle with the spool on (`openSessionDB({ spool })`, docs/spool.md), over the store of any
 * mode. A write that fails because the store cannot be reached or stays locked (SPOOLED_CODES,
 * once the mode's own retries are spent at its deadline) is appended to the spool with its key
 * and rejects with SPOOLED. While the spool holds records of this database, writes go one at a
 * time: the spool is replayed first, and a write that still cannot be applied is spooled behind
 * what is there, so the caller's order holds. Reads go straight to the store.
 */
export class SpoolingStore extends Store {
  readonly #inner: Store;
  readonly #spool: SpoolFile;
  /** The writes taken in order while records are pending: each waits for the one before. */
  #queue: Promise<unknown> = Promise.resolve();
  /** Set when this handle spooled a write or found records: writes go through the queue until a replay empties the file. */
  #pending = false;

  private constructor(inner: Store, spool: SpoolFile) {
    super(inner.files);
    this.#inner = inner;
    this.#spool = spool;
  }

  /** The handle over `inner`, having replayed what the spool holds (what cannot be applied yet stays, for its first write). */
  static async open(inner: Store, options: ResolvedOptions, spool: ResolvedSpool): Promise<SpoolingStore> {
    const store = new SpoolingStore(inner, new SpoolFile(options.files.db, spool.dir, spool.maxBytes));
    if (store.#spool.size() > 0) {
      try {
        await store.replaySpool();
      } catch (err) {
        if (!SPOOLED_CODES.has(toSessionDBError(err).code)) {
          await inner.close();
          throw err;
        }
      }
    }
    return store;
  }

  get mode(): Mode {
    return this.#inner.mode;
  }

  get engine(): Engine {
    return this.#inner.engine;
  }

  get daemon(): DaemonControl | null {
    return this.#inner.daemon;
  }

  /** The spool file of this database. */
  get spoolPath(): string {
    return this.#spool.path;
  }

  /** Every write is keyed: a spooled one is applied under its key, once. */
  protected override get autoKeys(): boolean {
    return true;
  }

  /**
   * Applies this database's spooled writes, in order, each once; resolves with how many were
   * applied and which were refused for good (dropped). Rejects with the error of the first that
   * cannot be applied yet (it stays spooled).
   */
  replaySpool(): Promise<ReplayResult> {
    return this.#inOrder(() => this.#replay());
  }

  protected call<K extends CallOpName>(name: K, args: ParamsOf<K>, key: string | null): Promise<ResultOf<K>> {
    if (OPERATIONS[name].kind !== "write") return Store.callOn(this.#inner, name, args, key);
    // When the call was made: the record's timestamp, where a replayed message sorts.
    const calledAt = Date.now() / 1000;
    let wire: unknown[];
    try {
      wire = argsForWire(name, trimUndefined(args));
    } catch (err) {
      return Promise.reject(toSessionDBError(err));
    }
    const write = { op: name as WriteOpName, wire, key: key ?? autoKey(), calledAt };
    if (!this.#pending && this.#spool.size() === 0) return this.#attempt(write) as Promise<ResultOf<K>>;
    this.#pending = true;
    return this.#inOrder(async () => {
      try {
        await this.#replay();
      } catch (err) {
        // The store still cannot take the spool's records: this write goes behind them.
        throw await this.#spoolOrThrow(err, write);
      }
      return this.#send(write);
    }) as Promise<ResultOf<K>>;
  }

  protected stream<K extends StreamOpName>(name: K, args: ParamsOf<K>): AsyncIterable<ResultOf<K>> {
    return Store.streamOn(this.#inner, name, args);
  }

  protected subscribe(filter: WatchFilter, opts: SubscribeOptions): AsyncIterable<WatchEvent> {
    return Store.subscribeOn(this.#inner, filter, opts);
  }

  /** Lets the writes taken finish, then closes the store. Idempotent. */
  async close(): Promise<void> {
    await this.#queue.catch(() => undefined);
    await this.#inner.close();
  }

  /** A write sent at once (nothing pending): if it fails to be spooled, its append waits its turn in the queue. */
  async #attempt(write: PendingWrite): Promise<unknown> {
    try {
      return await Store.callOn(this.#inner, write.op, write.wire as ParamsOf<WriteOpName>, write.key);
    } catch (err) {
      if (!this.#spooled(write.op, err)) throw err;
      this.#pending = true;
      return this.#inOrder(async () => {
        throw await this.#spoolOrThrow(err, write);
      });
    }
  }

  async #send(write: PendingWrite): Promise<unknown> {
    try {
      return await Store.callOn(this.#inner, write.op, write.wire as ParamsOf<WriteOpName>, write.key);
    } catch (err) {
      throw await this.#spoolOrThrow(err, write);
    }
  }

  async #replay(): Promise<ReplayResult> {
    const result = await replaySpool(this.#spool, applyBy(this.#inner as SessionDB));
    if (this.#spool.size() === 0) this.#pending = false;
    return result;
  }

  #spooled(op: WriteOpName, err: unknown): boolean {
    return isSpooledOp(op) && SPOOLED_CODES.has(toSessionDBError(err).code);
  }

  /** The error a failed write ends with: SpooledError once it is in the spool, else its own (saying why the spool could not take it). */
  async #spoolOrThrow(err: unknown, write: PendingWrite): Promise<SessionDBError> {
    const e = toSessionDBError(err);
    if (!this.#spooled(write.op, e)) return e;
    try {
      await this.#spool.append(write.key, write.op, write.wire, write.calledAt);
    } catch (refused) {
      return new SessionDBError(e.code, `${e.message} (and the spool could not take it: ${toSessionDBError(refused).message})`, { cause: e });
    }
    this.#pending = true;
    return new SpooledError(
      `${write.op} could not be applied before its deadline (${e.code}: ${e.message}); it is in the spool ${this.#spool.path} ` +
        `and will be applied exactly once, in order (key ${write.key})`,
      write.key,
      this.#spool.path,
      { cause: e },
    );
  }

  #inOrder<T>(step: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(step, step);
    this.#queue = run.catch(() => undefined);
    return run;
  }
}

interface PendingWrite {
  readonly op: WriteOpName;
  /** The arguments as the wire (and the spool) carries them. */
  readonly wire: unknown[];
  readonly key: string;
  /** Seconds since the epoch. */
  readonly calledAt: number;
}

/**
 * What a handle opening the database directly (or failing over to it) does first, spool on or
 * not: it replays what this user's spool holds for the database. Whatever stops it leaves the
 * records for the next one that can write (the daemon, another handle, `sessiondb spool replay`).
 */
export async function replayOnOpening(db: SessionDB, options: ResolvedOptions): Promise<void> {
  const spool = new SpoolFile(options.files.db, options.spoolDir);
  if (spool.size() === 0) return;
  await replaySpool(spool, applyBy(db)).catch(() => undefined);
}

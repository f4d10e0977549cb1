import type { CallOpName, ParamsOf, ResultOf, StreamOpName, WriteOpName } from "./operation-catalogue.js";
import { autoKey, splitWriteOptions } from "./operations/idempotency-keys.js";
import type { DatabaseFiles } from "./database-files.js";
import type { DaemonControl } from "./daemon-control.js";
import { invalidArgument } from "./errors.js";
import { parseWatchFilter, type WatchFilter } from "./operations/watch-filter.js";
import type { Engine, Mode, SessionDB } from "./session-db.js";
import type { WatchEvent } from "./watch-types.js";

/**
 * How a subscription starts. `resyncFirst`: its first event is a `resync` with the cursor it
 * starts from (auto mode, taking a watch over from a daemon that went away, says so to the
 * watcher: what changed in between is not known).
 */
export interface SubscribeOptions {
  signal: AbortSignal | undefined;
  resyncFirst: boolean;
}

type Call<K extends CallOpName> = Promise<ResultOf<K>>;

/**
 * Every method of `SessionDB`, written once: each is one line that names its operation and hands
 * its arguments to the transport's `call` (or `stream`). Direct mode, the daemon client and auto
 * mode (over SQLite or PostgreSQL) differ only in those two, so a method can be followed from here to its transport.
 */
export abstract class Store implements SessionDB {
  abstract readonly mode: Mode;
  abstract readonly engine: Engine;
  abstract readonly daemon: DaemonControl | null;
  readonly files: DatabaseFiles;
  /**
   * Runs one operation (all but the streamed ones) by name. `key`: a write's idempotency key
   * (null: none, and always for a read); a write's `args` come without their `WriteOptions`.
   */
  protected abstract call<K extends CallOpName>(name: K, args: ParamsOf<K>, key: string | null): Call<K>;
  /**
   * Whether a write whose caller gave no key gets one of this store's own (`auto-<time>-<uuid>-<n>`): the
   * stores that can send a write again (the daemon client, auto mode) do.
   */
  protected get autoKeys(): boolean {
    return false;
  }
  /** Runs a streamed operation, item by item. */
  protected abstract stream<K extends StreamOpName>(name: K, args: ParamsOf<K>): AsyncIterable<ResultOf<K>>;
  /**
   * Serves `watch` for a checked filter: the events until `signal` aborts or the handle closes
   * (then it ends), or the subscription fails (then it throws).
   */
  protected abstract subscribe(filter: WatchFilter, opts: SubscribeOptions): AsyncIterable<WatchEvent>;
  abstract close(): Promise<void>;

  protected constructor(files: DatabaseFiles) {
    this.files = files;
  }

  /** `call` on another store: how auto mode hands an operation to the store that serves it. */
  protected static callOn<K extends CallOpName>(store: Store, name: K, args: ParamsOf<K>, key: string | null): Call<K> {
    return store.call(name, args, key);
  }

  /** A write: its key taken off its last argument (or made, with `autoKeys`), its arguments handed on. */
  #write<K extends WriteOpName>(name: K, args: ParamsOf<K>): Call<K> {
    let split: { args: unknown[]; key: string | null };
    try {
      split = splitWriteOptions(name, args);
    } catch (err) {
      return Promise.reject(err);
    }
    // Without the WriteOptions the arguments are a prefix of the method's, all of them optional past it.
    return this.call(name, split.args as ParamsOf<K>, split.key ?? (this.autoKeys ? autoKey() : null));
  }

  protected static streamOn<K extends StreamOpName>(store: Store, name: K, args: ParamsOf<K>): AsyncIterable<ResultOf<K>> {
    return store.stream(name, args);
  }

  protected static subscribeOn(store: Store, filter: WatchFilter, opts: SubscribeOptions): AsyncIterable<WatchEvent> {
    return store.subscribe(filter, opts);
  }

  /** The options checked on the first `next()` (a bad one rejects it), then the store's feed. */
  async *#watch(args: ParamsOf<"watch">): AsyncGenerator<WatchEvent> {
    const filter = parseWatchFilter(args);
    const signal = (args[0] as { signal?: unknown } | null | undefined)?.signal;
    if (signal !== undefined && !(signal instanceof AbortSignal)) throw invalidArgument("watch: opts.signal must be an AbortSignal");
    if (signal?.aborted === true) return;
    yield* this.subscribe(filter, { signal, resyncFirst: false });
  }

  createSession(...a: ParamsOf<"createSession">) { return this.#write("createSession", a); }
  ensureSession(...a: ParamsOf<"ensureSession">) { return this.#write("ensureSession", a); }
  endSession(...a: ParamsOf<"endSession">) { return this.#write("endSession", a); }
  reopenSession(...a: ParamsOf<"reopenSession">) { return this.#write("reopenSession", a); }
  updateSystemPrompt(...a: ParamsOf<"updateSystemPrompt">) { return this.#write("updateSystemPrompt", a); }
  updateTokenCounts(...a: ParamsOf<"updateTokenCounts">) { return this.#write("updateTokenCounts", a); }
  getSession(...a: ParamsOf<"getSession">) { return this.call("getSession", a, null); }
  resolveSessionId(...a: ParamsOf<"resolveSessionId">) { return this.call("resolveSessionId", a, null); }
  sessionIdsByPrefix(...a: ParamsOf<"sessionIdsByPrefix">) { return this.call("sessionIdsByPrefix", a, null); }
  setSessionTitle(...a: ParamsOf<"setSessionTitle">) { return this.#write("setSessionTitle", a); }
  getSessionTitle(...a: ParamsOf<"getSessionTitle">) { return this.call("getSessionTitle", a, null); }
  getSessionByTitle(...a: ParamsOf<"getSessionByTitle">) { return this.call("getSessionByTitle", a, null); }
  resolveSessionByTitle(...a: ParamsOf<"resolveSessionByTitle">) { return this.call("resolveSessionByTitle", a, null); }
  getNextTitleInLineage(...a: ParamsOf<"getNextTitleInLineage">) { return this.call("getNextTitleInLineage", a, null); }
  getCompressionTip(...a: ParamsOf<"getCompressionTip">) { return this.call("getCompressionTip", a, null); }
  listSessionsRich(...a: ParamsOf<"listSessionsRich">) { return this.call("listSessionsRich", a, null); }
  appendMessage(...a: ParamsOf<"appendMessage">) { return this.#write("appendMessage", a); }
  getMessages(...a: ParamsOf<"getMessages">) { return this.call("getMessages", a, null); }
  getMessagesAsConversation(...a: ParamsOf<"getMessagesAsConversation">) { return this.call("getMessagesAsConversation", a, null); }
  clearMessages(...a: ParamsOf<"clearMessages">) { return this.#write("clearMessages", a); }
  popMessage(...a: ParamsOf<"popMessage">) { return this.#write("popMessage", a); }
  searchMessages(...a: ParamsOf<"searchMessages">) { return this.call("searchMessages", a, null); }
  searchSessions(...a: ParamsOf<"searchSessions">) { return this.call("searchSessions", a, null); }
  sessionCount(...a: ParamsOf<"sessionCount">) { return this.call("sessionCount", a, null); }
  messageCount(...a: ParamsOf<"messageCount">) { return this.call("messageCount", a, null); }
  sourceCounts(...a: ParamsOf<"sourceCounts">) { return this.call("sourceCounts", a, null); }
  exportSession(...a: ParamsOf<"exportSession">) { return this.call("exportSession", a, null); }
  exportAll(...a: ParamsOf<"exportAll">) { return this.stream("exportAll", a); }
  importSession(...a: ParamsOf<"importSession">) { return this.#write("importSession", a); }
  deleteSession(...a: ParamsOf<"deleteSession">) { return this.#write("deleteSession", a); }
  pruneSessions(...a: ParamsOf<"pruneSessions">) { return this.#write("pruneSessions", a); }
  watch(...a: ParamsOf<"watch">): AsyncIterable<WatchEvent> { return this.#watch(a); }
}

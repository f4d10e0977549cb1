/**
 * Direct mode's `watch` on PostgreSQL (issue 26): the handle's watchers share one listener
 * (pg-changes.ts) and each gets the events of its filter. A watcher registers before it replays
 * the messages past its cursor from the table, so the live ones that follow have no gap; the ids
 * it replayed are skipped when they are notified too, so none comes twice. A watcher whose queue
 * passes MAX_QUEUED events (it stopped reading) has its queue dropped and gets `resync`, then
 * the messages past its cursor again.
 */
import { SessionDBError } from "../errors.js";
import { matchesFilter, type FeedEvent, type WatchFilter } from "../operations/watch-filter.js";
import type { WatchEvent } from "../watch-types.js";
import type { PgPool } from "./pg-connection.js";
import { messagesAfter, newestMessageId, PgChanges } from "./pg-changes.js";

/** Events a watcher may have waiting; past it, its queue is dropped and it gets `resync`. */
export const MAX_QUEUED = 4096;
/** Messages read per statement while replaying. */
const REPLAY_PAGE = 500;
/** Replayed ids kept to skip their notifications (the newest: the only ones still in flight). */
const REPLAYED_KEPT = 10_000;

/** One watcher of the feed. */
class Watcher {
  readonly filter: WatchFilter;
  /** Messages at or before it are not this watcher's (its cursor when it started or resynced). */
  floor = Infinity;
  /** The last message id given (the cursor a resync carries on from). */
  cursor = 0;
  readonly replayed = new Set<number>();
  queue: WatchEvent[] = [];
  overflowed = false;
  failure: SessionDBError | null = null;
  #wake: (() => void) | null = null;

  constructor(filter: WatchFilter) {
    this.filter = filter;
  }

  push(event: WatchEvent, source: string | null): void {
    if (this.overflowed || !matchesFilter(this.filter, event, source)) return;
    if (event.type === "message" && (event.message.id <= this.floor || this.replayed.has(event.message.id))) return;
    if (this.queue.length >= MAX_QUEUED) {
      this.queue = [];
      this.overflowed = true;
    } else {
      this.queue.push(event);
    }
    this.wake();
  }

  fail(err: SessionDBError): void {
    this.failure = err;
    this.wake();
  }

  wake(): void {
    const wake = this.#wake;
    this.#wake = null;
    wake?.();
  }

  /** Resolves at the next push, failure or `signal`'s abort. */
  waitForMore(signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        signal.removeEventListener("abort", done);
        resolve();
      };
      this.#wake = done;
      signal.addEventListener("abort", done);
    });
  }

  noteReplayed(id: number): void {
    this.replayed.add(id);
    if (this.replayed.size > REPLAYED_KEPT) {
      for (const oldest of this.replayed) {
        this.replayed.delete(oldest);
        break;
      }
    }
  }
}

export class PgChangeFeed {
  readonly #changes: PgChanges;
  readonly #reads: PgPool;
  readonly #watchers = new Set<Watcher>();
  readonly #stop = new AbortController();

  private constructor(changes: PgChanges, reads: PgPool) {
    this.#changes = changes;
    this.#reads = reads;
  }

  /** Listens (pg-changes.ts) on a connection of its own to the database at `url`; rows are read on `reads`. */
  static async open(url: string, reads: PgPool, applicationName: string): Promise<PgChangeFeed> {
    let feed: PgChangeFeed | null = null;
    const changes = await PgChanges.open(url, reads, applicationName, (events) => {
      if (feed !== null) feed.#fanOut(events);
    });
    feed = new PgChangeFeed(changes, reads);
    changes.onFailure((err) => {
      for (const watcher of feed!.#watchers) watcher.fail(err);
    });
    return feed;
  }

  /** Whether the feed still runs (its connection is up and it was not closed). */
  get live(): boolean {
    return this.#changes.live && !this.#stop.signal.aborted;
  }

  /** How many watchers are iterating it. */
  get watchers(): number {
    return this.#watchers.size;
  }

  /**
   * The events of `filter` until `signal` aborts or the feed closes (then it ends) or fails (then
   * it throws). `resyncFirst`: a `resync` with the cursor comes first.
   */
  async *subscribe(filter: WatchFilter, signal?: AbortSignal, resyncFirst = false): AsyncGenerator<WatchEvent> {
    if (this.#stop.signal.aborted) throw new SessionDBError("CLOSED", "this SessionDB handle is closed");
    const watcher = new Watcher(filter);
    const stop = signal === undefined ? this.#stop.signal : AbortSignal.any([this.#stop.signal, signal]);
    this.#watchers.add(watcher); // before the replay: nothing committed after it is missed
    try {
      watcher.cursor = filter.afterMessageId ?? (await newestMessageId(this.#reads));
      if (resyncFirst) yield { type: "resync", afterMessageId: watcher.cursor };
      yield* this.#replay(watcher, stop);
      while (!stop.aborted) {
        if (watcher.failure !== null) throw watcher.failure;
        if (watcher.overflowed) {
          watcher.overflowed = false;
          yield { type: "resync", afterMessageId: watcher.cursor };
          yield* this.#replay(watcher, stop);
          continue;
        }
        const event = watcher.queue.shift();
        if (event === undefined) {
          await watcher.waitForMore(stop);
          continue;
        }
        if (event.type === "message") {
          // Heard while the replay read it from the table, or from before the cursor: not again.
          if (event.message.id <= watcher.floor || watcher.replayed.has(event.message.id)) continue;
          watcher.cursor = Math.max(watcher.cursor, event.message.id);
        }
        yield event;
      }
    } finally {
      this.#watchers.delete(watcher);
    }
  }

  /** Ends every watcher's iteration and the connection. Idempotent. */
  async close(): Promise<void> {
    this.#stop.abort();
    for (const watcher of this.#watchers) watcher.wake();
    await this.#changes.close();
  }

  #fanOut(events: FeedEvent[]): void {
    for (const { event, source } of events) for (const watcher of this.#watchers) watcher.push(event, source);
  }

  /** The messages past the watcher's cursor, from the table, page by page. */
  async *#replay(watcher: Watcher, stop: AbortSignal): AsyncGenerator<WatchEvent> {
    watcher.floor = watcher.cursor;
    watcher.replayed.clear();
    for (;;) {
      const page = await messagesAfter(this.#reads, watcher.filter, watcher.cursor, null, REPLAY_PAGE);
      for (const { event } of page) {
        if (stop.aborted || event.type !== "message") return;
        watcher.noteReplayed(event.message.id);
        watcher.cursor = event.message.id;
        yield event;
      }
      if (page.length < REPLAY_PAGE) return;
    }
  }
}

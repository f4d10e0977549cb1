/**
 * The daemon's side of `watch` (issue 26): its subscriptions, and the fan-out of the engine's
 * feed to them. The feed is on only while someone watches. Each commit's events reach every
 * subscription whose filter they match, encoded once per subscription as one chunk frame and
 * written at once: no subscription waits for another, and the writer never waits for any. What
 * a subscription has written and its client not yet read is bounded (`watchBufferBytes`): an
 * event past it is dropped with the rest, and once the client has read what was written it gets
 * a `resync` instead. A new subscription is registered first (its live events are held), then
 * replays the table up to where the live events begin, then gets the held ones: no gap, no
 * duplicate.
 */
import { SessionDBError, invalidArgument } from "../errors.js";
import { field, optBool, optObject } from "../operations/args.js";
import { matchesFilter, parseWatchFilter, type FeedEvent, type WatchFilter } from "../operations/watch-filter.js";
import { chunkFrame, encodeValue } from "../protocol/frame-codec.js";
import { markReals } from "../protocol/wire-reals.js";
import type { WatchEvent } from "../watch-types.js";
import type { ClientConnection } from "./client-connection.js";
import type { DaemonFeed } from "./daemon-engine.js";

/** Messages per page of a replay. */
const REPLAY_PAGE = 500;

export interface WatchLimits {
  /** Event bytes a subscription may have written and not yet read by its client. */
  watchBufferBytes: number;
  /** Subscriptions the daemon serves at once; past it a watch is answered OVERLOADED. */
  maxWatchers: number;
  /** Each page of a replay must be read within this. */
  requestTimeoutMs: number;
}

export interface WatchStats {
  /** Subscriptions now. */
  watchers: number;
  /** Events handed to subscriptions since the start. */
  events: number;
  /** Times a subscription fell behind and was told `resync`. */
  resyncs: number;
}

class Subscription {
  readonly id: number;
  readonly connection: ClientConnection;
  readonly filter: WatchFilter;
  /** Live events held while the replay runs (null once live). */
  held: WatchEvent[] | null = [];
  heldBytes = 0;
  /** Fell behind: events are dropped until its client has read what was written, then a resync goes. */
  behind = false;
  ended = false;
  readonly done: Promise<null>;
  end!: () => void;
  fail!: (err: SessionDBError) => void;

  constructor(id: number, connection: ClientConnection, filter: WatchFilter) {
    this.id = id;
    this.connection = connection;
    this.filter = filter;
    this.done = new Promise<null>((resolve, reject) => {
      this.end = () => resolve(null);
      this.fail = reject;
    });
  }
}

export class WatchHub {
  readonly #feed: DaemonFeed | null;
  readonly #limits: WatchLimits;
  readonly #subscriptions = new Set<Subscription>();
  /** The newest message id handed out (every later message reaches the subscriptions); null while the feed is off. */
  #cursor: number | null = null;
  #starting: Promise<number> | null = null;
  #closed = false;
  #events = 0;
  #resyncs = 0;

  constructor(feed: DaemonFeed | null, limits: WatchLimits) {
    this.#feed = feed;
    this.#limits = limits;
  }

  stats(): WatchStats {
    return { watchers: this.#subscriptions.size, events: this.#events, resyncs: this.#resyncs };
  }

  /** Serves one `watch` request until `unwatch` (resolves null), its client leaves, or the daemon stops (UNAVAILABLE). */
  async subscribe(id: number, args: unknown[], connection: ClientConnection): Promise<null> {
    const filter = parseWatchFilter(args);
    const resyncFirst = optBool(field(optObject(args[0], "opts"), "resyncFirst"), "opts.resyncFirst", false);
    const feed = this.#feed;
    if (feed === null) throw new SessionDBError("UNAVAILABLE", "this daemon's engine serves no change feed");
    if (this.#closed) throw new SessionDBError("UNAVAILABLE", "the daemon is shutting down");
    if (this.#subscriptions.size >= this.#limits.maxWatchers) {
      throw new SessionDBError("OVERLOADED", `the daemon serves ${this.#limits.maxWatchers} watches (--max-watchers); retry later`);
    }
    if ([...this.#subscriptions].some((s) => s.connection === connection && s.id === id)) {
      throw invalidArgument(`watch: request id ${id} already watches on this connection`);
    }
    const sub = new Subscription(id, connection, filter);
    this.#subscriptions.add(sub);
    const onGone = () => this.#remove(sub, null);
    connection.gone.addEventListener("abort", onGone, { once: true });
    void sub.done.finally(() => connection.gone.removeEventListener("abort", onGone)).catch(() => undefined);
    try {
      const upto = this.#cursor ?? (await this.#start(feed));
      const start = filter.afterMessageId ?? upto;
      if (resyncFirst) this.#write(sub, [{ type: "resync", afterMessageId: start }]);
      await this.#replay(feed, sub, start, upto);
      this.#goLive(sub);
    } catch (err) {
      this.#remove(sub, err instanceof SessionDBError ? err : new SessionDBError("INTERNAL", String(err)));
    }
    return sub.done;
  }

  /** `unwatch`: ends the subscription of request `id` on this connection (its final reply first). */
  async unwatch(args: unknown[], connection: ClientConnection): Promise<boolean> {
    const id = args[0];
    if (args.length !== 1 || typeof id !== "number" || !Number.isInteger(id)) {
      throw invalidArgument("unwatch takes one argument: the id of the watch request");
    }
    for (const sub of this.#subscriptions) {
      if (sub.connection === connection && sub.id === id) {
        this.#remove(sub, null);
        // The watch's final reply is settled in microtasks: it goes out before this turn ends, so before this answer.
        await new Promise((resolve) => setImmediate(resolve));
        return true;
      }
    }
    return false;
  }

  /** The daemon stops: every subscription ends with UNAVAILABLE, and the feed goes off. */
  close(): void {
    this.#closed = true;
    for (const sub of [...this.#subscriptions]) {
      this.#remove(sub, new SessionDBError("UNAVAILABLE", "the daemon is shutting down; resume from your last message id"));
    }
  }

  /** Turns the feed on (once, however many subscribe meanwhile). */
  #start(feed: DaemonFeed): Promise<number> {
    if (this.#starting !== null) return this.#starting;
    const starting = feed.start((events) => this.#onEvents(events)).then(
      (cursor) => {
        this.#starting = null;
        this.#cursor = cursor;
        // Everyone left while it started.
        if (this.#subscriptions.size === 0) this.#stop();
        return cursor;
      },
      (err: unknown) => {
        this.#starting = null;
        throw err;
      },
    );
    this.#starting = starting;
    return starting;
  }

  #stop(): void {
    if (this.#cursor === null || this.#starting !== null) return;
    this.#cursor = null;
    this.#feed?.stop();
  }

  /** One commit's events (or a resync): to every subscription they match. */
  #onEvents(events: FeedEvent[]): void {
    if (this.#cursor === null) return;
    for (const { event } of events) {
      if (event.type === "message") this.#cursor = Math.max(this.#cursor, event.message.id);
      else if (event.type === "resync") this.#cursor = event.afterMessageId;
    }
    if (this.#subscriptions.size === 0) return;
    if (events.some((e) => e.event.type === "resync")) {
      for (const sub of this.#subscriptions) this.#fellBehind(sub);
      return;
    }
    // Once for all subscriptions: the rows' REAL columns go out as floats (wire-reals.ts), and
    // each filter's events are picked and encoded once, however many subscriptions share it.
    markReals(events.map((e) => e.event));
    const byFilter = new Map<string, Picked>();
    for (const sub of this.#subscriptions) {
      const key = filterKey(sub.filter);
      let picked = byFilter.get(key);
      if (picked === undefined) {
        const mine = events.filter(({ event, source }) => matchesFilter(sub.filter, event, source)).map((e) => e.event);
        picked = { events: mine, encoded: null };
        byFilter.set(key, picked);
      }
      if (picked.events.length > 0) this.#deliver(sub, picked);
    }
  }

  #deliver(sub: Subscription, picked: Picked): void {
    if (sub.behind) return;
    const events = picked.events;
    if (sub.held !== null) {
      sub.held.push(...events);
      // A rough size: the bound is for memory, not exact bytes.
      sub.heldBytes += events.reduce((n, e) => n + estimatedBytes(e), 0);
      if (sub.heldBytes > this.#limits.watchBufferBytes) this.#fellBehind(sub);
      return;
    }
    picked.encoded ??= encodeValue(events);
    this.#write(sub, events, picked.encoded);
  }

  /** Writes one chunk frame, unless that would pass the subscription's bound: then it fell behind. */
  #write(sub: Subscription, events: WatchEvent[], encoded: Uint8Array = encodeValue(events)): void {
    const frame = chunkFrame(sub.id, encoded);
    if (sub.connection.unsentBytes + frame.length > this.#limits.watchBufferBytes && sub.connection.unsentBytes > 0) {
      this.#fellBehind(sub);
      return;
    }
    this.#events += events.length;
    if (!sub.connection.pushFrame(frame)) this.#remove(sub, null);
  }

  /**
   * Drops what the subscription holds; once its client has read what was written, it gets a
   * resync from the newest message id handed out then (what follows are the events after it).
   */
  #fellBehind(sub: Subscription): void {
    if (sub.behind || sub.ended) return;
    sub.behind = true;
    this.#resyncs++;
    if (sub.held !== null) {
      sub.held = [];
      sub.heldBytes = 0;
      return; // the replay ends at its next page and sends the resync
    }
    void sub.connection.whenDrained().then(() => this.#resync(sub));
  }

  #resync(sub: Subscription): void {
    if (sub.ended || this.#cursor === null) return;
    sub.behind = false;
    this.#write(sub, [{ type: "resync", afterMessageId: this.#cursor }]);
  }

  /**
   * The filter's messages with `start < id <= upto`, page by page, each as fast as the client
   * reads (the live events meanwhile are held, within the bound).
   */
  async #replay(feed: DaemonFeed, sub: Subscription, start: number, upto: number): Promise<void> {
    for (let after = start; after < upto && !sub.ended && !sub.behind; ) {
      const page = await feed.replay(sub.filter, after, upto, REPLAY_PAGE, Date.now() + this.#limits.requestTimeoutMs, sub.connection);
      if (page.length === 0 || sub.ended) return;
      const events = page.map((e) => e.event);
      markReals(events);
      this.#events += events.length;
      await sub.connection.sendChunk(sub.id, events);
      after = (events.at(-1) as Extract<WatchEvent, { type: "message" }>).message.id;
      if (page.length < REPLAY_PAGE) return;
    }
  }

  #goLive(sub: Subscription): void {
    if (sub.ended) return;
    const held = sub.held ?? [];
    sub.held = null;
    sub.heldBytes = 0;
    if (sub.behind) {
      void sub.connection.whenDrained().then(() => this.#resync(sub));
      return;
    }
    if (held.length > 0) this.#write(sub, held);
  }

  /** Ends a subscription: its final reply (`err` null: ok, nil) unless its client is gone. */
  #remove(sub: Subscription, err: SessionDBError | null): void {
    if (sub.ended) return;
    sub.ended = true;
    this.#subscriptions.delete(sub);
    if (err === null) sub.end();
    else sub.fail(err);
    if (this.#subscriptions.size === 0) this.#stop();
  }
}

/** One filter's events of a commit, and their encoding once the first subscription needs it. */
interface Picked {
  events: WatchEvent[];
  encoded: Uint8Array | null;
}

function filterKey(filter: WatchFilter): string {
  return filter.sessionId !== null ? `s:${filter.sessionId}` : filter.source !== null ? `o:${filter.source}` : "*";
}

/** About how many bytes an event takes on the wire: its text fields, and a little for the rest. */
function estimatedBytes(event: WatchEvent): number {
  if (event.type !== "message") return 1024;
  const m = event.message;
  return 256 + (m.content?.length ?? 0) + (m.reasoning?.length ?? 0) + (m.reasoning_details?.length ?? 0) + (m.codex_reasoning_items?.length ?? 0);
}

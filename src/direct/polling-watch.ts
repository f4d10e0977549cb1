/**
 * Direct mode's `watch` (issue 26): a read-only connection of the watcher's own, polled every
 * POLL_INTERVAL_MS with `PRAGMA data_version` (which changes when any other connection, of this
 * process or another, commits); on a change, one look (sqlite/change-reader.ts) on one snapshot
 * gives the events. Nothing runs between polls but the pragma.
 *
 * A write of this process (any direct-mode handle on the file) is told to the watches of the file
 * just after its COMMIT (`tellCommitted`), so each of them is read on its own, as the daemon's
 * writer reads its writes: a session created and ended by two writes within one poll gives
 * `created` then `ended`, not one `created` with the row already ended. Other processes' commits
 * are seen by the poll.
 */
import { isBusyError, toSessionDBError } from "../errors.js";
import type { WatchFilter } from "../operations/watch-filter.js";
import { ChangeReader, dataVersion, type FeedEvent } from "../sqlite/change-reader.js";
import { openConnection, type Connection } from "../sqlite/connection.js";
import { inReadSnapshot } from "../sqlite/transaction.js";
import type { WatchEvent } from "../watch-types.js";

/** How often direct mode looks for commits (documented in docs/library.md, "Watching sessions"). */
export const POLL_INTERVAL_MS = 50;
/**
 * Events told by this process's writes that a watcher may leave unread: past it they are dropped
 * and it gets `resync` (its memory stays bounded, as the daemon's per-watch buffer bounds it).
 */
export const TOLD_EVENTS_LIMIT = 10_000;

/** The watches being iterated in this process, by the database's real path. */
const watchesOf = new Map<string, Set<PollingWatch>>();

/**
 * A write of this process committed to the file at `path`, changing session `touched` (null: any
 * number of them): each watch of the file reads what it changed now, before the next write.
 */
export function tellCommitted(path: string, touched: string | null): void {
  const watches = watchesOf.get(path);
  if (watches === undefined) return;
  for (const watch of watches) watch.committed(touched);
}

export class PollingWatch {
  readonly #db: Connection;
  readonly #reader: ChangeReader;
  readonly #stop = new AbortController();
  readonly #path: string;
  #version: number;
  /** Events read by `committed`, not yet yielded (commit order, after those of the look being yielded). */
  #told: WatchEvent[] = [];
  /** Ends the wait between polls: set while the iteration waits. */
  #wake: (() => void) | null = null;

  private constructor(path: string, db: Connection, reader: ChangeReader, version: number) {
    this.#path = path;
    this.#db = db;
    this.#reader = reader;
    this.#version = version;
    let watches = watchesOf.get(path);
    if (watches === undefined) watchesOf.set(path, (watches = new Set()));
    watches.add(this);
  }

  /** Opens the connection and reads the cursor and the sessions' marks now: events start from here. */
  static open(path: string, busyTimeoutMs: number, filter: WatchFilter): PollingWatch {
    const db = openConnection(path, { readonly: true, busyTimeoutMs });
    try {
      const version = dataVersion(db);
      const reader = inReadSnapshot(db, () => new ChangeReader(db, filter));
      return new PollingWatch(path, db, reader, version);
    } catch (err) {
      db.close();
      throw toSessionDBError(err);
    }
  }

  /** The id of the last message read (where the watch starts, until it has read one). */
  get cursor(): number {
    return this.#reader.cursor;
  }

  /** Ends the iteration (at its next step) and closes the connection. Idempotent. */
  stop(): void {
    this.#stop.abort();
    const watches = watchesOf.get(this.#path);
    watches?.delete(this);
    if (watches?.size === 0) watchesOf.delete(this.#path);
    this.#wake?.();
    if (this.#db.open) this.#db.close();
  }

  /**
   * A write of this process just committed (tellCommitted): what it changed (the session it names,
   * every session for null, and the messages past the cursor), read now on this watch's own
   * connection, is held for the iteration. The poll's next look then finds it read already.
   */
  committed(touched: string | null): void {
    if (this.#stop.signal.aborted || !this.#db.open) return;
    let events: FeedEvent[];
    try {
      events = inReadSnapshot(this.#db, () => this.#reader.lookAt(this.#db, touched === null ? [] : [touched], touched === null));
    } catch {
      // Unreadable now (the file being recovered): the poll's next look reads it.
      return;
    }
    if (events.length === 0) return;
    for (const { event } of events) this.#told.push(event);
    if (this.#told.length > TOLD_EVENTS_LIMIT) this.#told = [{ type: "resync", afterMessageId: this.#reader.cursor }];
    this.#wake?.();
  }

  /** The next POLL_INTERVAL_MS, cut short by `stop` or by a write told. */
  async #pause(stop: AbortSignal): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    await new Promise<void>((resolve) => {
      this.#wake = resolve;
      onAbort = resolve;
      timer = setTimeout(resolve, POLL_INTERVAL_MS);
      stop.addEventListener("abort", onAbort, { once: true });
    });
    this.#wake = null;
    clearTimeout(timer);
    stop.removeEventListener("abort", onAbort!);
  }

  /** The events, until `stop()` or `signal`: replayed messages first, then each change as it is seen. */
  async *events(signal: AbortSignal | undefined): AsyncGenerator<WatchEvent> {
    const stop = signal === undefined ? this.#stop.signal : AbortSignal.any([this.#stop.signal, signal]);
    try {
      // The first look replays the messages past the cursor.
      let due = true;
      while (!stop.aborted) {
        while (this.#told.length > 0) {
          const event = this.#told.shift()!;
          if (stop.aborted) return;
          yield event;
        }
        if (!due) {
          await this.#pause(stop);
          if (stop.aborted) return;
          if (this.#told.length > 0) continue;
          // Read before the look: a commit landing in between shows in this look and again
          // changes the version, which costs one empty look and loses nothing.
          const version = dataVersion(this.#db);
          due = version !== this.#version;
          this.#version = version;
          if (!due) continue;
        }
        let look: { events: FeedEvent[]; more: boolean };
        try {
          look = inReadSnapshot(this.#db, () => this.#reader.look(this.#db));
        } catch (err) {
          if (!isBusyError(err)) throw toSessionDBError(err);
          // The file is being recovered: the next poll looks again.
          this.#version = Number.NaN;
          due = false;
          continue;
        }
        due = look.more;
        for (const { event } of look.events) {
          if (stop.aborted) return;
          yield event;
        }
      }
    } finally {
      this.stop();
    }
  }
}


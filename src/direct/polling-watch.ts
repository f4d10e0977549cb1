/**
 * Direct mode's `watch` (issue 26): a read-only connection of the watcher's own, polled every
 * POLL_INTERVAL_MS with `PRAGMA data_version` (which changes when any other connection, of this
 * process or another, commits); on a change, one look (sqlite/change-reader.ts) on one snapshot
 * gives the events. Nothing runs between polls but the pragma.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { isBusyError, toSessionDBError } from "../errors.js";
import type { WatchFilter } from "../operations/watch-filter.js";
import { ChangeReader, dataVersion, type FeedEvent } from "../sqlite/change-reader.js";
import { openConnection, type Connection } from "../sqlite/connection.js";
import { inReadSnapshot } from "../sqlite/transaction.js";
import type { WatchEvent } from "../watch-types.js";

/** How often direct mode looks for commits (documented in docs/library.md, "Watching sessions"). */
export const POLL_INTERVAL_MS = 50;

export class PollingWatch {
  readonly #db: Connection;
  readonly #reader: ChangeReader;
  readonly #stop = new AbortController();
  #version: number;

  private constructor(db: Connection, reader: ChangeReader, version: number) {
    this.#db = db;
    this.#reader = reader;
    this.#version = version;
  }

  /** Opens the connection and reads the cursor and the sessions' marks now: events start from here. */
  static open(path: string, busyTimeoutMs: number, filter: WatchFilter): PollingWatch {
    const db = openConnection(path, { readonly: true, busyTimeoutMs });
    try {
      const version = dataVersion(db);
      const reader = inReadSnapshot(db, () => new ChangeReader(db, filter));
      return new PollingWatch(db, reader, version);
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
    if (this.#db.open) this.#db.close();
  }

  /** The events, until `stop()` or `signal`: replayed messages first, then each change as it is seen. */
  async *events(signal: AbortSignal | undefined): AsyncGenerator<WatchEvent> {
    const stop = signal === undefined ? this.#stop.signal : AbortSignal.any([this.#stop.signal, signal]);
    try {
      // The first look replays the messages past the cursor.
      let due = true;
      while (!stop.aborted) {
        if (!due) {
          await sleep(POLL_INTERVAL_MS, undefined, { signal: stop }).catch(() => undefined);
          if (stop.aborted) return;
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


/**
 * PostgreSQL's change feed for the daemon's watch hub (issue 26): while someone watches, one
 * connection LISTENs for what every writer of the database notifies (pg/pg-changes.ts), this
 * daemon's own group commit and every other host's and process's alike; a subscription's replay
 * is read on a reader connection. When the LISTEN connection is lost the feed connects again
 * (with a growing pause) and tells the hub `resync`: what was committed meanwhile is not known.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { SessionDBError } from "../errors.js";
import type { FeedEvent, WatchFilter } from "../operations/watch-filter.js";
import { reconnectDelayMs } from "../pg/pg-backoff.js";
import type { PgPool } from "../pg/pg-connection.js";
import { messagesAfter, PgChanges } from "../pg/pg-changes.js";
import type { DaemonFeed } from "./daemon-engine.js";

export class PgFeed implements DaemonFeed {
  readonly #url: string;
  readonly #reads: PgPool;
  readonly #log: (line: string) => void;
  readonly #opening: (listening: Promise<unknown>) => void;
  #listener: ((events: FeedEvent[]) => void) | null = null;
  #changes: PgChanges | null = null;
  /** Bumped by every start and stop: a reconnect loop of an earlier one gives up. */
  #generation = 0;

  /**
   * `opening`: told of each start while it sets up its LISTEN (the daemon's writer holds its
   * batches meanwhile, so a write queued after a watch was asked for is heard by it).
   */
  constructor(url: string, reads: PgPool, log: (line: string) => void, opening: (listening: Promise<unknown>) => void = () => undefined) {
    this.#url = url;
    this.#reads = reads;
    this.#log = log;
    this.#opening = opening;
  }

  async start(listener: (events: FeedEvent[]) => void): Promise<number> {
    const generation = ++this.#generation;
    this.#listener = listener;
    const listening = this.#open(generation);
    this.#opening(listening);
    return (await listening).newest;
  }

  stop(): void {
    this.#generation++;
    this.#listener = null;
    const changes = this.#changes;
    this.#changes = null;
    void changes?.close();
  }

  async replay(filter: WatchFilter, after: number, upto: number, limit: number, deadline: number): Promise<FeedEvent[]> {
    if (Date.now() >= deadline) throw new SessionDBError("TIMEOUT", "the watch's replay was not started before its deadline");
    return messagesAfter(this.#reads, filter, after, upto, limit);
  }

  async #open(generation: number): Promise<PgChanges> {
    const changes = await PgChanges.open(this.#url, this.#reads, "sessiondb daemon watch", (events) => {
      if (generation === this.#generation) this.#listener?.(events);
    });
    if (generation !== this.#generation) {
      await changes.close();
      throw new SessionDBError("CLOSED", "the feed was stopped while it started");
    }
    this.#changes = changes;
    changes.onFailure((err) => void this.#reconnect(generation, err));
    return changes;
  }

  /** Listens again after the connection was lost, then says `resync` from where it listens anew. */
  async #reconnect(generation: number, why: SessionDBError): Promise<void> {
    this.#log(`the watch feed lost its PostgreSQL connection (${why.message}); reconnecting`);
    for (let attempt = 1; generation === this.#generation; attempt++) {
      await sleep(reconnectDelayMs(attempt));
      if (generation !== this.#generation) return;
      try {
        const changes = await this.#open(generation);
        this.#listener?.([{ event: { type: "resync", afterMessageId: changes.newest }, source: null }]);
        return;
      } catch (err) {
        if (generation !== this.#generation) return;
        this.#log(`the watch feed could not listen again yet (${(err as Error).message})`);
      }
    }
  }
}

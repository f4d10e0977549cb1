/**
 * SQLite's change feed for the daemon's watch hub: the writer thread's (workers/writer-feed.ts)
 * for what is committed, a reader thread's for a subscription's replay.
 */
import type { FeedEvent, WatchFilter } from "../operations/watch-filter.js";
import type { DaemonFeed } from "./daemon-engine.js";
import type { WatchReplay } from "./reader-messages.js";
import type { ReaderPool, ReadRequester } from "./reader-pool.js";
import type { WriterClient } from "./writer-client.js";

export class SqliteFeed implements DaemonFeed {
  readonly #writer: WriterClient;
  readonly #readers: ReaderPool;

  constructor(writer: WriterClient, readers: ReaderPool) {
    this.#writer = writer;
    this.#readers = readers;
  }

  start(listener: (events: FeedEvent[]) => void): Promise<number> {
    return this.#writer.startFeed(listener);
  }

  stop(): void {
    this.#writer.stopFeed();
  }

  async replay(filter: WatchFilter, after: number, upto: number, limit: number, deadline: number, requester?: ReadRequester): Promise<FeedEvent[]> {
    const page: WatchReplay = { filter, after, upto, limit };
    // The reader runs messagesAfter (sqlite/change-reader.ts), which gives FeedEvents.
    return (await this.#readers.run("watchReplay", page, deadline, undefined, requester)) as FeedEvent[];
  }
}

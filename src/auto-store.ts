import { setTimeout as sleep } from "node:timers/promises";
import { DaemonClient } from "./client/daemon-client.js";
import { directOptions } from "./client/daemon-lookup.js";
import { openDirect, type LocalStore } from "./direct/open-direct.js";
import { toSessionDBError } from "./errors.js";
import type { ResolvedOptions } from "./options.js";
import type { Engine } from "./session-db.js";
import { OPERATIONS, type CallOpName, type ParamsOf, type ResultOf, type StreamOpName } from "./operation-catalogue.js";
import type { DaemonControl } from "./daemon-control.js";
import type { WatchFilter } from "./operations/watch-filter.js";
import { Store, type SubscribeOptions } from "./store.js";
import { replayOnOpening } from "./spooling-store.js";
import type { WatchEvent } from "./watch-types.js";

/** How long a failing-over handle waits for a stopping daemon to close the connection. */
const DAEMON_RELEASE_MS = 15_000;

/**
 * Mode "auto" while a daemon serves the file: calls go to the daemon; when it goes away, the
 * handle fails over to direct mode and keeps working. A read in flight at that moment is re-run
 * directly, and so is a write with an idempotency key (every write has one unless the caller
 * turned `idempotencyKeys` off): applied once, whether or not the daemon committed it before it
 * died. A write without a key rejects with UNAVAILABLE and the caller decides. A daemon on PostgreSQL that answers
 * UNAVAILABLE but stays connected is not failed over from: the call rejects and the next one goes
 * to the same daemon.
 */
export class AutoStore extends Store {
  readonly #options: ResolvedOptions;
  #current: DaemonClient | LocalStore;
  #failover: Promise<LocalStore> | null = null;
  #closed = false;

  constructor(client: DaemonClient, options: ResolvedOptions) {
    super(options.files);
    this.#current = client;
    this.#options = options;
  }

  get mode(): "direct" | "daemon" {
    return this.#current.mode;
  }

  /** The database behind the daemon, or behind direct mode after a failover: the same one. */
  get engine(): Engine {
    return this.#current.engine;
  }

  /** The daemon's control while calls go to it; null once the handle has failed over. */
  get daemon(): DaemonControl | null {
    return this.#current.daemon;
  }

  protected override get autoKeys(): boolean {
    return this.#options.idempotencyKeys;
  }

  protected async call<K extends CallOpName>(name: K, args: ParamsOf<K>, key: string | null): Promise<ResultOf<K>> {
    const usable = this.#usable();
    const store = usable instanceof Promise ? await usable : usable;
    try {
      return await Store.callOn(store, name, args, key);
    } catch (err) {
      if (!(store instanceof DaemonClient) || toSessionDBError(err).code !== "UNAVAILABLE") throw err;
      // A daemon on PostgreSQL answers UNAVAILABLE while it cannot reach the server, and keeps
      // serving once it reconnects: direct mode would reach the same server no better. Only a
      // daemon that hung up is failed over from (the next call sees the connection gone).
      if (store.engine === "postgres" && store.connected) throw err;
      const direct = await this.#failOver(store);
      if (OPERATIONS[name].kind === "read" || key !== null) return Store.callOn(direct, name, args, key);
      throw err;
    }
  }

  protected async *stream<K extends StreamOpName>(name: K, args: ParamsOf<K>): AsyncIterable<ResultOf<K>> {
    yield* Store.streamOn(await this.#usable(), name, args);
  }

  /**
   * A watch follows the daemon; when the daemon goes away, it carries on in direct mode from its
   * cursor (the last message id it gave), after a `resync`: what sessions did meanwhile is not
   * known. A PostgreSQL daemon that answers UNAVAILABLE while connected is not failed over from.
   */
  protected async *subscribe(filter: WatchFilter, opts: SubscribeOptions): AsyncIterable<WatchEvent> {
    let cursor = filter.afterMessageId;
    let resyncFirst = opts.resyncFirst;
    for (;;) {
      const usable = this.#usable();
      const store = usable instanceof Promise ? await usable : usable;
      try {
        for await (const event of Store.subscribeOn(store, { ...filter, afterMessageId: cursor }, { signal: opts.signal, resyncFirst })) {
          if (event.type === "message") cursor = Math.max(cursor ?? 0, event.message.id);
          else if (event.type === "resync") cursor = event.afterMessageId;
          yield event;
        }
        return;
      } catch (err) {
        if (!(store instanceof DaemonClient) || toSessionDBError(err).code !== "UNAVAILABLE") throw err;
        if (store.engine === "postgres" && store.connected) throw err;
        await this.#failOver(store);
        resyncFirst = true;
      }
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    await this.#current.close();
  }

  /**
   * The daemon while its connection lives, else direct mode. No await while the store stays the
   * same, so a call made before `close()` reaches the store before `close()` does.
   */
  #usable(): DaemonClient | LocalStore | Promise<LocalStore> {
    const store = this.#current;
    // A closed handle never fails over: its daemon connection went away because it was closed.
    if (this.#closed) return store;
    return store instanceof DaemonClient && !store.connected ? this.#failOver(store) : store;
  }

  #failOver(client: DaemonClient): Promise<LocalStore> {
    this.#failover ??= (async () => {
      // A daemon that answered UNAVAILABLE is stopping: let it release the file first. If the file
      // was replaced, it still holds the old file's WAL under this name, and opening the new file
      // beside that WAL would read and write the wrong pages.
      await Promise.race([client.hungUp, sleep(DAEMON_RELEASE_MS, undefined, { ref: false })]);
      await client.close();
      const direct = await openDirect(await directOptions(this.#options));
      // What this user spooled for the database goes first (a spooling handle replays its own).
      if (this.#options.spool === null) await replayOnOpening(direct, this.#options);
      this.#current = direct;
      return direct;
    })();
    // A daemon that still holds the file without answering (HeldFileError): the next call tries again.
    this.#failover.catch(() => (this.#failover = null));
    return this.#failover;
  }
}

import { setTimeout as sleep } from "node:timers/promises";
import { DaemonClient } from "./client/daemon-client.js";
import { directOptions } from "./client/daemon-lookup.js";
import { DirectStore } from "./direct/direct-store.js";
import { toSessionDBError } from "./errors.js";
import type { ResolvedOptions } from "./options.js";
import type { ExportOptions, SessionDB, SessionExport } from "./session-db.js";
import { OPERATION_KINDS, type OpName } from "./operation-catalogue.js";
import { installOperationMethods, type OperationMethods } from "./operation-methods.js";

/** How long a failing-over handle waits for a stopping daemon to close the connection. */
const DAEMON_RELEASE_MS = 15_000;

/**
 * Mode "auto" while a daemon serves the file: calls go to the daemon; when it goes away, the
 * handle fails over to direct mode and keeps working. A read in flight at that moment is re-run
 * directly; a write in flight is not (it may have been committed before the daemon died), so it
 * rejects with UNAVAILABLE and the caller decides.
 */
export class AutoStore implements SessionDB {
  readonly #options: ResolvedOptions;
  #current: DaemonClient | DirectStore;
  #failover: Promise<DirectStore> | null = null;

  constructor(client: DaemonClient, options: ResolvedOptions) {
    this.#current = client;
    this.#options = options;
  }

  get mode(): "direct" | "daemon" {
    return this.#current.mode;
  }

  async call(name: OpName, args: readonly unknown[]): Promise<unknown> {
    const store = await this.#usable();
    try {
      return await store.call(name, args);
    } catch (err) {
      if (!(store instanceof DaemonClient) || toSessionDBError(err).code !== "UNAVAILABLE") throw err;
      const direct = await this.#failOver(store);
      if (OPERATION_KINDS[name] === "read") return direct.call(name, args);
      throw err;
    }
  }

  async *exportAll(opts?: ExportOptions): AsyncIterable<SessionExport> {
    yield* (await this.#usable()).exportAll(opts);
  }

  async close(): Promise<void> {
    await this.#current.close();
  }

  /** The daemon while its connection lives, else direct mode. */
  async #usable(): Promise<DaemonClient | DirectStore> {
    const store = this.#current;
    return store instanceof DaemonClient && !store.connected ? this.#failOver(store) : store;
  }

  #failOver(client: DaemonClient): Promise<DirectStore> {
    this.#failover ??= (async () => {
      // A daemon that answered UNAVAILABLE is stopping: let it release the file first. If the file
      // was replaced, it still holds the old file's WAL under this name, and opening the new file
      // beside that WAL would read and write the wrong pages.
      await Promise.race([client.hungUp, sleep(DAEMON_RELEASE_MS, undefined, { ref: false })]);
      await client.close();
      const direct = DirectStore.open(await directOptions(this.#options));
      this.#current = direct;
      return direct;
    })();
    return this.#failover;
  }
}

export interface AutoStore extends OperationMethods {}

installOperationMethods(AutoStore);

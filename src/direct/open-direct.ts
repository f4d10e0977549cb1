import type { Engine } from "../engine-kind.js";
import type { ResolvedOptions } from "../options.js";
import { PgStore } from "./pg-store.js";
import { DirectStore } from "./direct-store.js";

/** A store in this process: the SQLite file, or a PostgreSQL database through a small pool. */
export type LocalStore = DirectStore | PgStore;

/** Each engine's direct store. */
const DIRECT_STORES = {
  sqlite: (options) => DirectStore.open(options),
  postgres: (options) => PgStore.open(options),
} satisfies Record<Engine, (options: ResolvedOptions) => LocalStore | Promise<LocalStore>>;

/** Direct mode on `options.path`, whichever engine it names. */
export async function openDirect(options: ResolvedOptions): Promise<LocalStore> {
  return DIRECT_STORES[options.engine](options);
}

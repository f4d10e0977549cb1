import type { ResolvedOptions } from "../options.js";
import { PgStore } from "./pg-store.js";
import { isPostgresUrl } from "../database-location.js";
import { DirectStore } from "./direct-store.js";

/** A store in this process: the SQLite file, or a PostgreSQL database through a small pool. */
export type LocalStore = DirectStore | PgStore;

/** Direct mode on `options.path`, whichever engine it names. */
export async function openDirect(options: ResolvedOptions): Promise<LocalStore> {
  return isPostgresUrl(options.path) ? PgStore.open(options) : DirectStore.open(options);
}

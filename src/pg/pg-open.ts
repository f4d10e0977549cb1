import { withPoolClient, type PgPool } from "./pg-connection.js";
import { ensurePgSchema } from "./pg-schema.js";

/** Creates or migrates the schema over one connection of the pool; false when it must stay read-only. */
export function openPgDatabase(pool: PgPool): Promise<boolean> {
  return withPoolClient(pool, ensurePgSchema);
}

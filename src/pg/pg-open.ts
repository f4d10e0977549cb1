import type { PgPool } from "./pg-connection.js";
import { ensurePgSchema } from "./pg-schema.js";

/** Creates or migrates the schema over one connection of the pool; false when it must stay read-only. */
export async function openPgDatabase(pool: PgPool): Promise<boolean> {
  const client = await pool.connect();
  try {
    return await ensurePgSchema(client);
  } finally {
    client.release();
  }
}

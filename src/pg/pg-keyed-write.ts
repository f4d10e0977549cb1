/**
 * PostgreSQL's idempotency keys (issue 25), in the write's own transaction (the daemon writer's
 * savepoint, or direct mode's transaction): the key is claimed first (`INSERT … ON CONFLICT DO
 * NOTHING`), so a second daemon on another host running the same key waits on the first one's
 * row, then finds it committed (its first result answered) or rolled back (it runs the write).
 * The table is made by the schema's second migration (pg-schema.ts).
 */
import type { WriteOpName } from "../operation-catalogue.js";
import { now } from "../operations/clock.js";
import { answerAgain, encodeResult, KEY_PRUNE_BATCH, KEYS_TABLE, writeDigest, type KeptWrite } from "../operations/idempotency-keys.js";
import type { PgQueryable } from "./pg-connection.js";
import { changes, one } from "./pg-operation.js";
import type { PgChangeNotes } from "./pg-change-notes.js";
import { runPgOperation } from "./pg-operations.js";

/** The statements of the second migration. */
export const KEYS_TABLE_STATEMENTS: readonly string[] = [
  `CREATE TABLE ${KEYS_TABLE} (key TEXT PRIMARY KEY, op TEXT NOT NULL, digest TEXT NOT NULL, result TEXT NOT NULL, created_at DOUBLE PRECISION NOT NULL)`,
  `CREATE INDEX idx_${KEYS_TABLE}_created ON ${KEYS_TABLE}(created_at)`,
];

/**
 * Runs a write once per key (see sqlite/keyed-write.ts for the rules): with no key as it is;
 * a key already committed answers its first result, or IDEMPOTENCY_CONFLICT. A write that ran
 * is noted in `notes` (what the transaction tells the watchers); one answered again is not.
 */
export async function runPgKeyedWrite(
  db: PgQueryable, op: WriteOpName, params: unknown, key: string | null, notes: PgChangeNotes | null = null,
): Promise<unknown> {
  if (key === null) {
    const result = await runPgOperation(db, op, params);
    await notes?.note(db, op, params, result);
    return result;
  }
  const digest = writeDigest(op, params);
  const claimed = await changes(
    db,
    `INSERT INTO ${KEYS_TABLE} (key, op, digest, result, created_at) VALUES ($1, $2, $3, '[]', $4) ON CONFLICT (key) DO NOTHING`,
    [key, op, digest, now()],
  );
  if (claimed === 0) {
    const kept = (await one<KeptWrite>(db, `SELECT op, digest, result FROM ${KEYS_TABLE} WHERE key = $1`, [key]))!;
    return answerAgain(kept, key, op, digest);
  }
  const result = await runPgOperation(db, op, params);
  await db.query(`UPDATE ${KEYS_TABLE} SET result = $2 WHERE key = $1`, [key, encodeResult(result)]);
  await notes?.note(db, op, params, result);
  return result;
}

/** Deletes at most KEY_PRUNE_BATCH keys older than `retentionHours`, oldest first. Returns how many. */
export function prunePgKeys(db: PgQueryable, retentionHours: number): Promise<number> {
  return changes(
    db,
    `DELETE FROM ${KEYS_TABLE} WHERE key IN (SELECT key FROM ${KEYS_TABLE} WHERE created_at < $1 ORDER BY created_at LIMIT $2)`,
    [now() - retentionHours * 3600, KEY_PRUNE_BATCH],
  );
}

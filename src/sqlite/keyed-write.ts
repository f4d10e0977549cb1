/**
 * SQLite's idempotency keys (issue 25): a write given a key runs, and its key and first result
 * are recorded, in the caller's write transaction (direct mode's, or the writer thread's
 * savepoint), so a key is remembered exactly when its write is committed. The table is made by
 * the first keyed write: a file written without keys (and the reference Python implementation)
 * never sees it, and one that has it is still a schema-6 file the reference reads and writes.
 */
import { errorCode } from "../errors.js";
import { now, sql, type Connection } from "./connection.js";
import { runOperation } from "./operations.js";
import type { WriteOpName } from "../operation-catalogue.js";
import { answerAgain, encodeResult, KEY_PRUNE_BATCH, KEYS_TABLE, writeDigest, type KeptWrite } from "../operations/idempotency-keys.js";

/**
 * No index on `created_at`: a third B-tree written by every keyed write cost throughput. Rows are
 * appended in time order, so the oldest have the lowest rowids and pruning reads them from there.
 */
const TABLE_SQL = `CREATE TABLE IF NOT EXISTS ${KEYS_TABLE} (
  key TEXT PRIMARY KEY, op TEXT NOT NULL, digest TEXT NOT NULL, result TEXT NOT NULL, created_at REAL NOT NULL)`;
const FIND_SQL = `SELECT op, digest, result FROM ${KEYS_TABLE} WHERE key = ?`;
const KEEP_SQL = `INSERT INTO ${KEYS_TABLE} (key, op, digest, result, created_at) VALUES (?, ?, ?, ?, ?)`;
/** The first KEY_PRUNE_BATCH rows by rowid (the oldest), those of them past the retention: a bounded read and delete. */
const PRUNE_SQL = `DELETE FROM ${KEYS_TABLE} WHERE rowid IN (SELECT rowid FROM ${KEYS_TABLE} ORDER BY rowid LIMIT ?) AND created_at < ?`;

function isMissingTable(err: unknown): boolean {
  return errorCode(err) === "SQLITE_ERROR" && err instanceof Error && err.message.includes(`no such table: ${KEYS_TABLE}`);
}

function findKept(db: Connection, key: string): KeptWrite | undefined {
  try {
    return sql(db, FIND_SQL).get(key) as KeptWrite | undefined;
  } catch (err) {
    if (!isMissingTable(err)) throw err;
    // Made inside the write's transaction: rolled back with it, made again by the next keyed write.
    db.exec(TABLE_SQL);
    return undefined;
  }
}

/**
 * Runs a write (inside the caller's write transaction) once per key: with no key, as it is; with
 * a key already recorded, nothing runs and the first result is answered again, or
 * IDEMPOTENCY_CONFLICT when the key was used by another op or other arguments.
 */
export function runKeyedWrite(db: Connection, op: WriteOpName, params: unknown, key: string | null): unknown {
  if (key === null) return runOperation(db, op, params);
  const digest = writeDigest(op, params);
  const kept = findKept(db, key);
  if (kept !== undefined) return answerAgain(kept, key, op, digest);
  const result = runOperation(db, op, params);
  sql(db, KEEP_SQL).run(key, op, digest, encodeResult(result), now());
  return result;
}

/**
 * Deletes at most KEY_PRUNE_BATCH keys older than `retentionHours`, oldest first (inside the
 * caller's write transaction); a clock set back leaves a newer row first a while, which only delays pruning. Returns how many; 0 when the file has no keys table.
 */
export function pruneKeys(db: Connection, retentionHours: number): number {
  try {
    return sql(db, PRUNE_SQL).run(KEY_PRUNE_BATCH, now() - retentionHours * 3600).changes;
  } catch (err) {
    if (isMissingTable(err)) return 0;
    throw err;
  }
}

/** Fresh database files for the runs, and the exact row check after each one. */
import { statSync } from "node:fs";
import Database from "better-sqlite3";
import { openConnection } from "../src/sqlite/connection.js";
import { ensureSchema } from "../src/sqlite/schema.js";
import { DEFAULT_RETRY } from "../src/sqlite/transaction.js";
import { openPgPool } from "../src/pg/pg-connection.js";

/** Creates a new file with sessiondb's schema (WAL mode), as the first open of a real agent would. */
export function createDatabase(path: string): void {
  const db = openConnection(path, { busyTimeoutMs: 5000 });
  try {
    ensureSchema(db, DEFAULT_RETRY);
  } finally {
    db.close();
  }
}

export interface RowCheck {
  /** Appends the clients were told succeeded. */
  expected: number;
  /** Rows found in their sessions afterwards. */
  found: number;
  /** Every session holds exactly its acknowledged appends, and its `message_count` agrees. */
  exact: boolean;
  /** Sessions whose rows or counter differ, for the report. */
  mismatches: Array<{ sessionId: string; acknowledged: number; rows: number; counter: number | null }>;
}

const ROWS_SQL = "SELECT session_id AS id, COUNT(*) AS n FROM messages GROUP BY session_id";
const COUNTERS_SQL = "SELECT id, message_count AS n FROM sessions";
type Counted = Array<{ id: string; n: number }>;

/** Compares what each session holds with what its client was told was written. */
export function checkRows(path: string, acknowledged: ReadonlyMap<string, number>): RowCheck {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    return compareRows(db.prepare(ROWS_SQL).all() as Counted, db.prepare(COUNTERS_SQL).all() as Counted, acknowledged);
  } finally {
    db.close();
  }
}

/** `checkRows` on a PostgreSQL database. */
export async function checkPgRows(url: string, acknowledged: ReadonlyMap<string, number>): Promise<RowCheck> {
  const pool = await openPgPool(url, { max: 1, applicationName: "sessiondb bench check" });
  try {
    const rows = (await pool.query(ROWS_SQL)).rows as Counted;
    return compareRows(rows, (await pool.query(COUNTERS_SQL)).rows as Counted, acknowledged);
  } finally {
    await pool.end();
  }
}

function compareRows(rowCounts: Counted, counterRows: Counted, acknowledged: ReadonlyMap<string, number>): RowCheck {
  const rows = new Map(rowCounts.map((r) => [r.id, r.n]));
  const counters = new Map(counterRows.map((r) => [r.id, r.n]));
  let expected = 0;
  let found = 0;
  const mismatches: RowCheck["mismatches"] = [];
  for (const [sessionId, count] of acknowledged) {
    const n = rows.get(sessionId) ?? 0;
    const counter = counters.get(sessionId) ?? null;
    expected += count;
    found += n;
    if (n !== count || counter !== count) mismatches.push({ sessionId, acknowledged: count, rows: n, counter });
  }
  return { expected, found, exact: mismatches.length === 0, mismatches };
}

/** The size of the file's `-wal`, 0 when there is none. */
export function walBytes(path: string): number {
  try {
    return statSync(`${path}-wal`).size;
  } catch {
    return 0;
  }
}

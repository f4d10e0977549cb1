/**
 * The CJK substring index: SPEC §3.1 step 4 (the `LIKE '%raw%'` fallback) served from an FTS5
 * `trigram` table instead of a scan of every message.
 *
 * No trigger of ours feeds it: the reference Python implementation must keep writing on a SQLite
 * without the trigram tokenizer. The daemon creates the table and keeps it up to date by catch-up
 * from the messages table (inside a group commit every so many requests or ms, and in chunks
 * while idle: workers/writer.ts); direct mode catches up too when the table is there, and never
 * creates it (a file it makes has exactly the SPEC schema). What the index may get wrong is always
 * corrected at query time:
 * - rows appended since the last catch-up (by any process) lie above the high-water mark and are
 *   scanned with LIKE;
 * - rows deleted since (by any process) leave stale entries, so every candidate is joined to its
 *   message and the LIKE is checked again, which also makes the index a superset search
 *   (`detail=none` keeps it small; trigram case folding is wider than LIKE's ASCII folding);
 * - when the newest rows are deleted the mark drops with them, so reused rowids are indexed again;
 * - messages our import writes below the mark (an export's own ids) are listed as outliers.
 * Only messages that contain CJK are indexed: a CJK query can match no other.
 *
 * For the newest-first order of the fallback, each indexed message also gets a bound: the
 * latest timestamp of any indexed message at or below its id (a running maximum, kept as the
 * catch-up goes up the ids). A search walks the index from the newest id down and may stop
 * once it holds enough hits later than the bound where it stands (./cjk-search.ts). A message
 * whose timestamp would spoil the bound (not a finite number, or ahead of the indexer's clock)
 * is an outlier instead: it is checked by every search, like the messages above the mark.
 */
import { sql, type Connection } from "./connection.js";
import { containsCjk } from "../operations/fts-query.js";
import { SCHEMA_VERSION } from "./schema.js";

const CREATE_SQL = `
CREATE VIRTUAL TABLE IF NOT EXISTS messages_cjk USING fts5(
    content, tokenize = 'trigram', content = '', contentless_delete = 1, detail = none
);
CREATE TABLE IF NOT EXISTS messages_cjk_state (
    high_water INTEGER NOT NULL,
    mark_session TEXT,
    mark_timestamp REAL
);
INSERT INTO messages_cjk_state (high_water) SELECT 0 WHERE NOT EXISTS (SELECT 1 FROM messages_cjk_state);
CREATE TABLE IF NOT EXISTS messages_cjk_bound (id INTEGER PRIMARY KEY, bound REAL);
CREATE TABLE IF NOT EXISTS messages_cjk_outliers (id INTEGER PRIMARY KEY);
`;

/** The index's tables and the column holding the message id, emptied together. */
const TABLES = [
  ["messages_cjk", "rowid"],
  ["messages_cjk_bound", "id"],
  ["messages_cjk_outliers", "id"],
] as const;

const TABLE_SQL = "SELECT 1 FROM sqlite_master WHERE name = ?";
/** The table made last: a file with only the first ones has the index of an earlier version. */
const NEWEST_TABLE = "messages_cjk_outliers";
/**
 * The mark counts only while the message at it is the one that was indexed there (same session
 * and time): if its id was deleted and handed out again, everything is scanned until the next
 * catch-up sorts it out.
 */
export const VALID_MARK_SQL = `COALESCE((SELECT st.high_water FROM messages_cjk_state st JOIN messages mk
  ON mk.id = st.high_water AND mk.session_id = st.mark_session AND mk.timestamp = st.mark_timestamp), 0)`;
const STATE_SQL = `SELECT st.high_water AS mark, ${VALID_MARK_SQL} AS valid,
  (SELECT COALESCE(max(id), 0) FROM messages) AS top,
  (SELECT 1 FROM messages WHERE id = st.high_water) AS markExists,
  (SELECT seq FROM sqlite_sequence WHERE name = 'messages') AS seq
  FROM messages_cjk_state st`;
const TAIL_SQL = "SELECT id, content, timestamp FROM messages WHERE id > ? ORDER BY id LIMIT ?";
const INSERT_SQL = "INSERT OR REPLACE INTO messages_cjk (rowid, content) VALUES (?, ?)";
const LAST_BOUND_SQL = "SELECT bound FROM messages_cjk_bound WHERE id <= ? ORDER BY id DESC LIMIT 1";
const INSERT_BOUND_SQL = "INSERT OR REPLACE INTO messages_cjk_bound (id, bound) VALUES (?, ?)";
const INSERT_OUTLIER_SQL = "INSERT OR IGNORE INTO messages_cjk_outliers (id) VALUES (?)";
const INSERT_OUTLIERS_BELOW_MARK_SQL = `INSERT OR IGNORE INTO messages_cjk_outliers (id)
  SELECT value FROM json_each(?) WHERE value <= (SELECT high_water FROM messages_cjk_state)`;
const RESET_MARK_SQL = "UPDATE messages_cjk_state SET high_water = 0, mark_session = NULL, mark_timestamp = NULL";
const SET_MARK_SQL = `UPDATE messages_cjk_state SET high_water = @id,
  mark_session = (SELECT session_id FROM messages WHERE id = @id), mark_timestamp = (SELECT timestamp FROM messages WHERE id = @id)`;
const WINDOW_SQL = "SELECT rowid FROM messages_cjk WHERE rowid > ? ORDER BY rowid LIMIT ?";
const staleSql = ([table, column]: (typeof TABLES)[number]) => `DELETE FROM ${table} WHERE ${column} IN
  (SELECT value FROM json_each(?) AS c WHERE NOT EXISTS (SELECT 1 FROM messages m WHERE m.id = c.value))`;
/** The outliers our import listed have no entry in the trigram table, so no window finds them. */
const STALE_OUTLIERS_SQL = `DELETE FROM messages_cjk_outliers
  WHERE NOT EXISTS (SELECT 1 FROM messages m WHERE m.id = messages_cjk_outliers.id)`;

/** The rows one catch-up inside a write transaction indexes at most (the rest waits for the next). */
const CATCH_UP_ROWS = 256;
/** Index entries checked for a deleted message per idle chunk. */
const SWEEP_ROWS = 2000;
/**
 * How far ahead of the indexer's clock a timestamp may be and still count in the bounds: a
 * message from a writer whose clock is ahead would otherwise make every search walk back to it.
 */
const AHEAD_S = 60;

/** Where the stale-entry sweep of each connection has got to, by rowid (it wraps around). */
const sweepCursor = new WeakMap<Connection, number>();

/**
 * Creates the index when the file has none (the daemon's writer, once at start). False when this
 * SQLite cannot build it (no FTS5 trigram tokenizer), or the file is a newer program's: search
 * then stays with the LIKE scan.
 * Must run inside a write transaction.
 */
export function createCjkIndex(db: Connection): boolean {
  // A newer program's file is left as it is, like the schema (schema.ts).
  const version = sql(db, "SELECT version FROM schema_version LIMIT 1").pluck().get();
  if (version !== SCHEMA_VERSION) return false;
  return inSavepoint(db, () => {
    const earlier = hasTable(db, "messages_cjk_state") && !hasCjkIndex(db);
    db.exec(CREATE_SQL);
    // An earlier version's index has no bounds: it is built again from the first message.
    if (earlier) {
      dropAbove(db, null);
      sql(db, RESET_MARK_SQL).run();
    }
    return true;
  });
}

function hasTable(db: Connection, name: string): boolean {
  return sql(db, TABLE_SQL).get(name) !== undefined;
}

export function hasCjkIndex(db: Connection): boolean {
  return hasTable(db, NEWEST_TABLE);
}

/** Empties the index above `id` (all of it for null). */
function dropAbove(db: Connection, id: number | null): void {
  for (const [table, column] of TABLES) {
    if (id === null) sql(db, `DELETE FROM ${table}`).run();
    else sql(db, `DELETE FROM ${table} WHERE ${column} > ?`).run(id);
  }
}

/**
 * Lists messages just written with ids of their own (an import keeping an export's ids) that lie
 * at or below the mark, where the catch-up will not look: every search checks them. Must run
 * inside the write transaction that wrote them.
 */
export function noteCjkBackfill(db: Connection, ids: readonly number[]): void {
  if (ids.length > 0 && hasCjkIndex(db)) sql(db, INSERT_OUTLIERS_BELOW_MARK_SQL).run(JSON.stringify(ids));
}

/**
 * Indexes up to `maxRows` messages above the high-water mark and moves the mark. Must run
 * inside a write transaction; a failure rolls back its own work only and is never the caller's
 * (the rows stay above the mark, where queries scan them). Returns true when rows remain.
 */
export function catchUpCjkIndex(db: Connection, maxRows = CATCH_UP_ROWS): boolean {
  return hasCjkIndex(db) && inSavepoint(db, () => indexTail(db, maxRows));
}

/** Runs `fn` in a savepoint of the caller's transaction; on failure rolls back to it and answers false. */
function inSavepoint(db: Connection, fn: () => boolean): boolean {
  db.exec("SAVEPOINT cjk_index");
  try {
    const result = fn();
    db.exec("RELEASE cjk_index");
    return result;
  } catch {
    db.exec("ROLLBACK TO cjk_index");
    db.exec("RELEASE cjk_index");
    return false;
  }
}

interface IndexState {
  mark: number;
  /** The mark if the message at it is still the one indexed there, else 0. */
  valid: number;
  top: number;
  markExists: 1 | null;
  seq: number | null;
}

/** Where indexing resumes: the mark, unless messages at or below it changed under it. */
function resumeFrom(db: Connection, state: IndexState): number {
  const { mark, valid, top, markExists, seq } = state;
  if (mark === 0 || valid === mark) return mark;
  if (top < mark) {
    // The newest messages were deleted: their ids may be handed out again, so nothing above
    // the newest remaining message counts as indexed.
    dropAbove(db, top);
    return top;
  }
  // The message at the mark is gone but newer ones exist. AUTOINCREMENT never hands its id out
  // again; otherwise (or if its id holds another message now) start over.
  if (markExists === null && seq !== null && seq >= mark) return mark;
  dropAbove(db, null);
  return 0;
}

function indexTail(db: Connection, maxRows: number): boolean {
  const state = sql(db, STATE_SQL).get() as IndexState | undefined;
  if (state === undefined) return false;
  let mark = resumeFrom(db, state);
  const rows = sql(db, TAIL_SQL).all(mark, maxRows) as Array<{ id: number; content: string | null; timestamp: unknown }>;
  const insert = sql(db, INSERT_SQL);
  const insertBound = sql(db, INSERT_BOUND_SQL);
  const insertOutlier = sql(db, INSERT_OUTLIER_SQL);
  // The running maximum: rows at or below the mark were indexed in id order before these.
  let bound = (sql(db, LAST_BOUND_SQL).pluck().get(mark) as number | null | undefined) ?? null;
  const latest = Date.now() / 1000 + AHEAD_S;
  for (const row of rows) {
    if (row.content === null || !containsCjk(row.content)) continue;
    insert.run(row.id, row.content);
    const ts = row.timestamp;
    if (typeof ts === "number" && Number.isFinite(ts) && ts <= latest) bound = Math.max(bound ?? ts, ts);
    else insertOutlier.run(row.id);
    insertBound.run(row.id, bound);
  }
  mark = rows.at(-1)?.id ?? mark;
  if (mark !== state.valid) sql(db, SET_MARK_SQL).run({ id: mark });
  return rows.length === maxRows;
}

/**
 * Removes the entries of deleted messages from the next window of the index (a cursor that
 * wraps around): stale entries never change a result, but they cost disk and candidate checks.
 * Must run inside a write transaction. True until the cursor has gone once round.
 */
export function sweepCjkIndex(db: Connection): boolean {
  if (!hasCjkIndex(db)) return false;
  const from = sweepCursor.get(db) ?? 0;
  const window = sql(db, WINDOW_SQL).pluck().all(from, SWEEP_ROWS) as number[];
  if (window.length > 0) for (const table of TABLES) sql(db, staleSql(table)).run(JSON.stringify(window));
  const more = window.length === SWEEP_ROWS;
  if (!more) sql(db, STALE_OUTLIERS_SQL).run();
  sweepCursor.set(db, more ? (window.at(-1) ?? 0) : 0);
  return more;
}

/** The trigram tokenizer needs 3 characters to look anything up. */
export const MIN_INDEXED_LENGTH = 3;

/**
 * The CJK substring index: SPEC §3.1 step 4 (the `LIKE '%raw%'` fallback) served from an FTS5
 * `trigram` table instead of a scan of every message.
 *
 * No trigger of ours feeds it: the reference Python implementation must keep writing on a SQLite
 * without the trigram tokenizer. The daemon creates the table and keeps it up to date by catch-up
 * from the messages table (inside each group commit, and in chunks while idle); direct mode
 * catches up too when the table is there, and never creates it (a file it makes has exactly the
 * SPEC schema). What the index may get wrong is always corrected at query time:
 * - rows appended since the last catch-up (by any process) lie above the high-water mark and are
 *   scanned with LIKE;
 * - rows deleted since (by any process) leave stale entries, so every candidate is joined to its
 *   message and the LIKE is checked again, which also makes the index a superset search
 *   (`detail=none` keeps it small; trigram case folding is wider than LIKE's ASCII folding);
 * - when the newest rows are deleted the mark drops with them, so reused rowids are indexed again.
 * Queries under 3 characters (no trigram), and files without the table, take the plain LIKE scan.
 * Only messages that contain CJK are indexed: a CJK query can match no other.
 */
import { sql, type Connection } from "./connection.js";
import { containsCjk } from "./fts-query.js";
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
`;

const EXISTS_SQL = "SELECT 1 FROM sqlite_master WHERE name = 'messages_cjk_state'";
/**
 * The mark counts only while the message at it is the one that was indexed there (same session
 * and time): if its id was deleted and handed out again, everything is scanned until the next
 * catch-up sorts it out.
 */
const VALID_MARK_SQL = `COALESCE((SELECT st.high_water FROM messages_cjk_state st JOIN messages mk
  ON mk.id = st.high_water AND mk.session_id = st.mark_session AND mk.timestamp = st.mark_timestamp), 0)`;
const STATE_SQL = `SELECT st.high_water AS mark, ${VALID_MARK_SQL} AS valid,
  (SELECT COALESCE(max(id), 0) FROM messages) AS top,
  (SELECT 1 FROM messages WHERE id = st.high_water) AS markExists,
  (SELECT seq FROM sqlite_sequence WHERE name = 'messages') AS seq
  FROM messages_cjk_state st`;
const TAIL_SQL = "SELECT id, content FROM messages WHERE id > ? ORDER BY id LIMIT ?";
const INSERT_SQL = "INSERT OR REPLACE INTO messages_cjk (rowid, content) VALUES (?, ?)";
const DROP_ABOVE_SQL = "DELETE FROM messages_cjk WHERE rowid > ?";
const DROP_ALL_SQL = "DELETE FROM messages_cjk";
const SET_MARK_SQL = `UPDATE messages_cjk_state SET high_water = @id,
  mark_session = (SELECT session_id FROM messages WHERE id = @id), mark_timestamp = (SELECT timestamp FROM messages WHERE id = @id)`;
const WINDOW_SQL = "SELECT rowid FROM messages_cjk WHERE rowid > ? ORDER BY rowid LIMIT ?";
const STALE_SQL = `DELETE FROM messages_cjk WHERE rowid IN (SELECT value FROM json_each(?) AS c
  WHERE NOT EXISTS (SELECT 1 FROM messages m WHERE m.id = c.value))`;

/** The rows one catch-up inside a write transaction indexes at most (the rest waits for the next). */
const CATCH_UP_ROWS = 256;
/** Index entries checked for a deleted message per idle chunk. */
const SWEEP_ROWS = 2000;

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
    db.exec(CREATE_SQL);
    return true;
  });
}

export function hasCjkIndex(db: Connection): boolean {
  return sql(db, EXISTS_SQL).get() !== undefined;
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
    sql(db, DROP_ABOVE_SQL).run(top);
    return top;
  }
  // The message at the mark is gone but newer ones exist. AUTOINCREMENT never hands its id out
  // again; otherwise (or if its id holds another message now) start over.
  if (markExists === null && seq !== null && seq >= mark) return mark;
  sql(db, DROP_ALL_SQL).run();
  return 0;
}

function indexTail(db: Connection, maxRows: number): boolean {
  const state = sql(db, STATE_SQL).get() as IndexState | undefined;
  if (state === undefined) return false;
  let mark = resumeFrom(db, state);
  const rows = sql(db, TAIL_SQL).all(mark, maxRows) as Array<{ id: number; content: string | null }>;
  const insert = sql(db, INSERT_SQL);
  for (const row of rows) {
    if (row.content !== null && containsCjk(row.content)) insert.run(row.id, row.content);
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
  if (window.length > 0) sql(db, STALE_SQL).run(JSON.stringify(window));
  const more = window.length === SWEEP_ROWS;
  sweepCursor.set(db, more ? (window.at(-1) ?? 0) : 0);
  return more;
}

/**
 * The fallback's candidate rows: the index's matches plus everything above the mark. The
 * caller joins them to messages and checks `content LIKE` on each.
 */
const CANDIDATES_SQL = `SELECT rowid AS id FROM messages_cjk WHERE messages_cjk MATCH @trigrams
  UNION SELECT id FROM messages WHERE id > ${VALID_MARK_SQL}`;

/** The trigram tokenizer needs 3 characters to look anything up. */
const MIN_INDEXED_LENGTH = 3;

/**
 * The `FROM` of the fallback over the index (`m` = messages), or null when the plain scan must
 * serve this query: no index in the file, or a query too short for trigrams.
 */
export function cjkCandidates(db: Connection, raw: string): { from: string; trigrams: string } | null {
  if ([...raw].length < MIN_INDEXED_LENGTH || !hasCjkIndex(db)) return null;
  return { from: `(${CANDIDATES_SQL}) AS c CROSS JOIN messages m ON m.id = c.id`, trigrams: trigramQuery(raw) };
}

/** Distinct trigrams a query's AND takes at most: fewer only widens the candidates. */
const MAX_TRIGRAMS = 32;

/**
 * Every trigram of the text, each a quoted term, ANDed: with `detail=none` the index keeps no
 * positions (so no phrase queries), and a row holding all of them is a candidate.
 */
function trigramQuery(raw: string): string {
  const chars = [...raw];
  const trigrams = new Set<string>();
  for (let i = 0; i + MIN_INDEXED_LENGTH <= chars.length && trigrams.size < MAX_TRIGRAMS; i++) {
    trigrams.add(chars.slice(i, i + MIN_INDEXED_LENGTH).join(""));
  }
  return [...trigrams].map((t) => `"${t.replace(/"/g, '""')}"`).join(" AND ");
}

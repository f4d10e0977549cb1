/**
 * `sessiondb check` and `verify`: SQLite's own integrity check (or the quick one), which also walks
 * every FTS5 index's structure, then, unless quick, a comparison of the full-text index with the
 * messages it indexes: the index is rebuilt from the messages in the connection's temp schema
 * and the two vocabularies (term, documents, occurrences) must match. A read-only connection may
 * do all of it (the temp schema is its own), so it runs on a daemon's reader thread, in one read
 * transaction: the counts and the index comparison are of one snapshot.
 */
import { sql, type Connection } from "./connection.js";
import { inReadSnapshot } from "./transaction.js";
import { toSessionDBError } from "../errors.js";
import { tableExists } from "./schema.js";
import type { IndexReport, IntegrityReport } from "../integrity-report.js";

export type { IndexReport, IntegrityReport };

/** Most problem lines SQLite reports (its own default is 100). */
const MAX_PROBLEMS = 100;
const CHECK_TABLE = "sessiondb_check_fts";

export interface CheckOptions {
  /** `quick_check` instead of `integrity_check`. */
  quick: boolean;
  /** Compare the full-text index with the messages (the `check` command's, unless quick; a backup's check skips it). */
  ftsContent: boolean;
}

export function checkIntegrity(db: Connection, options: CheckOptions): IntegrityReport {
  try {
    return runChecks(db, options);
  } catch (err) {
    // A file too damaged for the check to run to its end: that is the finding, not a failure to check.
    const { code, message } = toSessionDBError(err);
    if (code !== "CORRUPT") throw err;
    const unknown: IndexReport = { present: false, ok: false, problems: [] };
    return { ok: false, ...options, problems: [message], fts: unknown, cjk: { ...unknown }, sessions: null, messages: null };
  }
}

/** SQLite's check in a transaction of its own; its lines other than "ok". */
function sqliteCheck(db: Connection, quick: boolean): string[] {
  // A query on each FTS5 table first: opening a cursor makes FTS5 reload the index's structure
  // when another connection changed it, which its integrity method alone does not.
  for (const table of ["messages_fts", "messages_cjk"]) {
    if (tableExists(db, table)) db.prepare(`SELECT 1 FROM ${table} WHERE rowid = 0`).get();
  }
  return (db.prepare(`PRAGMA ${quick ? "quick_check" : "integrity_check"}(${MAX_PROBLEMS})`).pluck().all() as string[])
    .filter((line) => line !== "ok");
}

function runChecks(db: Connection, { quick, ftsContent }: CheckOptions): IntegrityReport {
  let lines = inReadSnapshot(db, () => sqliteCheck(db, quick));
  if (lines.some((line) => line.startsWith("fts5:"))) {
    // Seen once while other connections merged the index's segments (a daemon's writer), FTS5
    // reported blobs of segments merged away: a damaged index says so again on a new snapshot.
    const again = new Set(inReadSnapshot(db, () => sqliteCheck(db, quick)));
    lines = lines.filter((line) => !line.startsWith("fts5:") || again.has(line));
  }
  db.exec("BEGIN");
  try {
    const about = (table: string) => (line: string) => line.includes(`"${table}"`);
    const fts: IndexReport = { present: tableExists(db, "messages_fts"), ok: true, problems: lines.filter(about("messages_fts")) };
    const cjk: IndexReport = { present: tableExists(db, "messages_cjk"), ok: true, problems: lines.filter(about("messages_cjk")) };
    const problems = lines.filter((line) => !about("messages_fts")(line) && !about("messages_cjk")(line));
    if (fts.present && ftsContent && fts.problems.length === 0) fts.problems.push(...ftsContentProblems(db));
    if (cjk.present) cjk.problems.push(...cjkStateProblems(db));
    fts.ok = fts.problems.length === 0;
    cjk.ok = cjk.problems.length === 0;
    const report: IntegrityReport = {
      ok: problems.length === 0 && fts.ok && cjk.ok,
      quick,
      ftsContent,
      problems,
      fts,
      cjk,
      ...snapshotCounts(db),
    };
    return report;
  } finally {
    if (db.inTransaction) db.exec("COMMIT");
  }
}


/** Sessions and messages as this connection sees them now (inside a transaction: its snapshot). */
export function snapshotCounts(db: Connection): { sessions: number; messages: number } {
  return {
    sessions: sql(db, "SELECT count(*) FROM sessions").pluck().get() as number,
    messages: sql(db, "SELECT count(*) FROM messages").pluck().get() as number,
  };
}

/**
 * The index rebuilt from the messages (as the triggers feed it: every row's content) in the temp
 * schema, and its vocabulary compared with the index's. A message the index missed, or an entry
 * left by a message changed or deleted without the triggers, shows as a term whose counts differ.
 */
function ftsContentProblems(db: Connection): string[] {
  const definition = sql(db, "SELECT sql FROM sqlite_master WHERE name = 'messages_fts'").pluck().get() as string;
  const tokenize = /tokenize\s*=\s*('(?:[^']|'')*'|"[^"]*"|\w+)/i.exec(definition)?.[1];
  const drop = () => db.exec(`DROP TABLE IF EXISTS temp.${CHECK_TABLE}_vocab; DROP TABLE IF EXISTS temp.messages_fts_vocab; DROP TABLE IF EXISTS temp.${CHECK_TABLE};`);
  drop();
  try {
    db.exec(`CREATE VIRTUAL TABLE temp.${CHECK_TABLE} USING fts5(content, content = ''${tokenize === undefined ? "" : `, tokenize = ${tokenize}`})`);
    db.exec(`INSERT INTO temp.${CHECK_TABLE}(rowid, content) SELECT id, content FROM main.messages`);
    db.exec(`CREATE VIRTUAL TABLE temp.${CHECK_TABLE}_vocab USING fts5vocab(temp, ${CHECK_TABLE}, 'row')`);
    db.exec("CREATE VIRTUAL TABLE temp.messages_fts_vocab USING fts5vocab(main, messages_fts, 'row')");
    const differing = (a: string, b: string) =>
      db.prepare(`SELECT term FROM (SELECT term, doc, cnt FROM temp.${a} EXCEPT SELECT term, doc, cnt FROM temp.${b}) LIMIT 5`).pluck().all() as string[];
    const stale = differing("messages_fts_vocab", `${CHECK_TABLE}_vocab`);
    const missing = differing(`${CHECK_TABLE}_vocab`, "messages_fts_vocab");
    const terms = [...new Set([...stale, ...missing])];
    return terms.length === 0
      ? []
      : [`messages_fts does not match the messages: the counts of ${terms.map((t) => JSON.stringify(t)).join(", ")}${terms.length >= 5 ? " (and maybe more)" : ""} differ; \`sessiondb optimize\` does not repair this, a rebuild does (INSERT INTO messages_fts(messages_fts) VALUES('rebuild'))`];
  } finally {
    drop();
  }
}

/** The CJK index's own bookkeeping: exactly one state row, with a mark that is a message id or 0. */
function cjkStateProblems(db: Connection): string[] {
  if (!tableExists(db, "messages_cjk_state")) return ["messages_cjk has no messages_cjk_state table"];
  const rows = sql(db, "SELECT high_water FROM messages_cjk_state").pluck().all() as unknown[];
  if (rows.length !== 1) return [`messages_cjk_state has ${rows.length} rows, not 1`];
  const mark = rows[0];
  if (typeof mark !== "number" || !Number.isSafeInteger(mark) || mark < 0) return [`messages_cjk_state's mark is ${String(mark)}, not a message id`];
  return [];
}

import { SessionDBError } from "../errors.js";
import type { Connection } from "./connection.js";
import { inWriteTransaction, retryBusySync, type RetryPolicy } from "./transaction.js";
import { SCHEMA_VERSION } from "./schema-version.js";

export { SCHEMA_VERSION };

const TABLES_SQL = `
CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL);

CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    source TEXT NOT NULL,
    user_id TEXT,
    model TEXT,
    model_config TEXT,
    system_prompt TEXT,
    parent_session_id TEXT,
    started_at REAL NOT NULL,
    ended_at REAL,
    end_reason TEXT,
    message_count INTEGER DEFAULT 0,
    tool_call_count INTEGER DEFAULT 0,
    input_tokens INTEGER DEFAULT 0,
    output_tokens INTEGER DEFAULT 0,
    cache_read_tokens INTEGER DEFAULT 0,
    cache_write_tokens INTEGER DEFAULT 0,
    reasoning_tokens INTEGER DEFAULT 0,
    billing_provider TEXT,
    billing_base_url TEXT,
    billing_mode TEXT,
    estimated_cost_usd REAL,
    actual_cost_usd REAL,
    cost_status TEXT,
    cost_source TEXT,
    pricing_version TEXT,
    title TEXT,
    FOREIGN KEY (parent_session_id) REFERENCES sessions(id)
);

CREATE TABLE IF NOT EXISTS messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    role TEXT NOT NULL,
    content TEXT,
    tool_call_id TEXT,
    tool_calls TEXT,
    tool_name TEXT,
    timestamp REAL NOT NULL,
    token_count INTEGER,
    finish_reason TEXT,
    reasoning TEXT,
    reasoning_details TEXT,
    codex_reasoning_items TEXT
);

CREATE INDEX IF NOT EXISTS idx_sessions_source ON sessions(source);
CREATE INDEX IF NOT EXISTS idx_sessions_parent ON sessions(parent_session_id);
CREATE INDEX IF NOT EXISTS idx_sessions_started ON sessions(started_at DESC);
CREATE INDEX IF NOT EXISTS idx_messages_session ON messages(session_id, timestamp);
`;

const TITLE_INDEX_SQL =
  "CREATE UNIQUE INDEX IF NOT EXISTS idx_sessions_title_unique ON sessions(title) WHERE title IS NOT NULL";

const FTS_TABLE_SQL =
  "CREATE VIRTUAL TABLE IF NOT EXISTS messages_fts USING fts5(content, content=messages, content_rowid=id)";

const FTS_TRIGGERS_SQL = `
CREATE TRIGGER IF NOT EXISTS messages_fts_insert AFTER INSERT ON messages BEGIN
    INSERT INTO messages_fts(rowid, content) VALUES (new.id, new.content);
END;
CREATE TRIGGER IF NOT EXISTS messages_fts_delete AFTER DELETE ON messages BEGIN
    INSERT INTO messages_fts(messages_fts, rowid, content) VALUES('delete', old.id, old.content);
END;
CREATE TRIGGER IF NOT EXISTS messages_fts_update AFTER UPDATE ON messages BEGIN
    INSERT INTO messages_fts(messages_fts, rowid, content) VALUES('delete', old.id, old.content);
    INSERT INTO messages_fts(rowid, content) VALUES (new.id, new.content);
END;
`;

/** Columns added by later versions, in the order the reference adds them. */
const V5_SESSION_COLUMNS: ReadonlyArray<readonly [string, string]> = [
  ["cache_read_tokens", "INTEGER DEFAULT 0"],
  ["cache_write_tokens", "INTEGER DEFAULT 0"],
  ["reasoning_tokens", "INTEGER DEFAULT 0"],
  ["billing_provider", "TEXT"],
  ["billing_base_url", "TEXT"],
  ["billing_mode", "TEXT"],
  ["estimated_cost_usd", "REAL"],
  ["actual_cost_usd", "REAL"],
  ["cost_status", "TEXT"],
  ["cost_source", "TEXT"],
  ["pricing_version", "TEXT"],
];
const V6_MESSAGE_COLUMNS: ReadonlyArray<readonly [string, string]> = [
  ["reasoning", "TEXT"],
  ["reasoning_details", "TEXT"],
  ["codex_reasoning_items", "TEXT"],
];

export function tableExists(db: Connection, name: string): boolean {
  return db.prepare("SELECT 1 FROM sqlite_master WHERE name = ?").get(name) !== undefined;
}

export function readVersion(db: Connection): number | null {
  if (!tableExists(db, "schema_version")) return null;
  const row = db.prepare("SELECT version FROM schema_version LIMIT 1").get() as { version: number } | undefined;
  return row?.version ?? null;
}

function addColumnIfMissing(db: Connection, table: string, column: string, type: string): void {
  const columns = db.prepare(`PRAGMA table_info(${table})`).all() as Array<{ name: string }>;
  if (!columns.some((c) => c.name === column)) {
    db.exec(`ALTER TABLE ${table} ADD COLUMN "${column.replace(/"/g, '""')}" ${type}`);
  }
}

function createTitleIndex(db: Connection): void {
  const duplicates = db
    .prepare("SELECT title FROM sessions WHERE title IS NOT NULL GROUP BY title HAVING COUNT(*) > 1 LIMIT 20")
    .all() as Array<{ title: string }>;
  if (duplicates.length > 0) {
    const names = duplicates.map((d) => JSON.stringify(d.title)).join(", ");
    throw new SessionDBError(
      "SCHEMA",
      `cannot create the unique title index: these titles are used by more than one session: ${names}; ` +
        "rename or clear the duplicates, then open the file again",
    );
  }
  db.exec(TITLE_INDEX_SQL);
}

function migrate(db: Connection, from: number | null): void {
  db.exec(TABLES_SQL);
  if (from === null) {
    db.prepare("INSERT INTO schema_version (version) VALUES (?)").run(SCHEMA_VERSION);
  } else {
    if (from < 2) addColumnIfMissing(db, "messages", "finish_reason", "TEXT");
    if (from < 3) addColumnIfMissing(db, "sessions", "title", "TEXT");
    for (const [name, type] of from < 5 ? V5_SESSION_COLUMNS : []) addColumnIfMissing(db, "sessions", name, type);
    for (const [name, type] of from < 6 ? V6_MESSAGE_COLUMNS : []) addColumnIfMissing(db, "messages", name, type);
    db.prepare("UPDATE schema_version SET version = ?").run(SCHEMA_VERSION);
  }
  createTitleIndex(db);
  if (!tableExists(db, "messages_fts")) {
    db.exec(FTS_TABLE_SQL);
    db.exec("INSERT INTO messages_fts(messages_fts) VALUES('rebuild')");
  }
  db.exec(FTS_TRIGGERS_SQL);
}

function isCurrent(db: Connection): boolean {
  const version = readVersion(db);
  if (version !== null && version > SCHEMA_VERSION) return true; // a newer program's file: leave it alone
  return (
    version === SCHEMA_VERSION &&
    tableExists(db, "messages_fts") &&
    tableExists(db, "idx_sessions_title_unique") &&
    tableExists(db, "messages_fts_update")
  );
}

/**
 * Brings the file to schema 6 (SPEC §1): a fresh file gets everything, an older one migrates in
 * one `BEGIN IMMEDIATE` transaction (a crash leaves the old version; two processes opening it at
 * once migrate it once, the second finding it current), a newer one is left alone.
 */
export function ensureSchema(db: Connection, retry: RetryPolicy): void {
  if (isCurrent(db)) return;
  retryBusySync(retry, () =>
    inWriteTransaction(db, () => {
      if (isCurrent(db)) return;
      migrate(db, readVersion(db));
    }),
  );
}

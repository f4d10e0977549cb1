/**
 * Database files built and inspected by hand, with raw SQL and no sessiondb code in between:
 * the schema of SPEC §1 as the reference writes it, the older versions it migrates from, and
 * the facts a test compares (columns, sqlite_master, the schema cookie, the version row).
 */
import { readFileSync } from "node:fs";
import Database from "better-sqlite3";
import { sourceFixture } from "./processes.js";

/** The exact schema text of SPEC §1 (test/fixtures/schema-v6.sql, also read by the Python fixture). */
export const V6_SCHEMA_SQL = readFileSync(sourceFixture("schema-v6.sql"), "utf8");

type Raw = Database.Database;

/** Opens the file with plain better-sqlite3, runs `fn`, and always closes it. */
export function withRaw<T>(path: string, fn: (db: Raw) => T, options: { readonly?: boolean } = {}): T {
  const db = new Database(path, { readonly: options.readonly ?? false, fileMustExist: true, timeout: 5000 });
  try {
    return fn(db);
  } finally {
    db.close();
  }
}

export interface LegacyOptions {
  /** Whether the file has `messages_fts` and its triggers (a v1 file may not). Default true. */
  fts?: boolean;
  /** `wal` as the reference leaves its files; `delete` for a file that never saw WAL. Default wal. */
  journalMode?: "wal" | "delete";
  /** Titles to give the seeded sessions (v3 and later), by session id. */
  titles?: Record<string, string>;
  /** Raw SQL run after the schema is built, e.g. the first steps of a crashed reference migration. */
  extraSql?: string;
}

/** The version that introduced each column and index of SPEC §1; everything else was there in v1. */
const INTRODUCED_IN: Readonly<Record<string, number>> = {
  finish_reason: 2,
  title: 3,
  idx_sessions_title_unique: 4,
  ...Object.fromEntries(
    ["cache_read_tokens", "cache_write_tokens", "reasoning_tokens", "billing_provider", "billing_base_url", "billing_mode",
      "estimated_cost_usd", "actual_cost_usd", "cost_status", "cost_source", "pricing_version"].map((c) => [c, 5]),
  ),
  reasoning: 6,
  reasoning_details: 6,
  codex_reasoning_items: 6,
};

function introducedIn(line: string): number {
  const name = /^\s+(\w+) /.exec(line)?.[1] ?? /INDEX IF NOT EXISTS (\w+)/.exec(line)?.[1];
  return (name !== undefined ? INTRODUCED_IN[name] : undefined) ?? 1;
}

/**
 * The schema a reference program of `version` (1 to 5) created: the SPEC §1 text without what
 * later versions added, and without the FTS table and triggers when `fts` is false.
 */
export function legacySchemaSql(version: number, fts: boolean): string {
  const text = fts ? V6_SCHEMA_SQL : V6_SCHEMA_SQL.slice(0, V6_SCHEMA_SQL.indexOf("CREATE VIRTUAL TABLE"));
  return text
    .split("\n")
    .filter((line) => introducedIn(line) <= version)
    .join("\n")
    .replace(/,(\s*\n\);)/g, "$1"); // the comma left behind by a dropped last column
}

/** What `seedLegacyRows` writes, for the assertions. */
export const LEGACY_ROWS = {
  parent: { id: "old-parent", source: "cli", model: "old-model", started_at: 1_600_000_000.5, input_tokens: 120, output_tokens: 45 },
  child: { id: "old-child", source: "telegram", started_at: 1_600_000_100.25 },
  messages: [
    { session_id: "old-parent", role: "user", content: "hello from the legacy kumquat era", timestamp: 1_600_000_001, tool_calls: null },
    { session_id: "old-parent", role: "assistant", content: "calling a tool for the quokka", timestamp: 1_600_000_002, tool_calls: '[{"id":"call_1","type":"function"}]' },
    { session_id: "old-parent", role: "tool", content: "tool result about narwhals", timestamp: 1_600_000_003, tool_calls: null },
    { session_id: "old-child", role: "user", content: "child session asks about axolotls", timestamp: 1_600_000_101, tool_calls: null },
  ],
} as const;

/**
 * Builds a file as a reference program of `version` left it, with two sessions (a parent and a
 * child) and four messages whose counters are consistent.
 */
export function buildLegacyFile(path: string, version: number, options: LegacyOptions = {}): void {
  const db = new Database(path);
  try {
    db.pragma(`journal_mode = ${options.journalMode ?? "wal"}`);
    db.exec(legacySchemaSql(version, options.fts ?? true));
    if (options.extraSql !== undefined) db.exec(options.extraSql);
    db.prepare("INSERT INTO schema_version (version) VALUES (?)").run(version);
    seedLegacyRows(db, version, options.titles ?? {});
  } finally {
    db.close();
  }
}

function seedLegacyRows(db: Raw, version: number, titles: Record<string, string>): void {
  const { parent, child, messages } = LEGACY_ROWS;
  const insertSession = db.prepare(
    `INSERT INTO sessions (id, source, model, parent_session_id, started_at, ended_at, end_reason, message_count,
       tool_call_count, input_tokens, output_tokens) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  insertSession.run(parent.id, parent.source, parent.model, null, parent.started_at, parent.started_at + 50, "user_exit", 3, 1, parent.input_tokens, parent.output_tokens);
  insertSession.run(child.id, child.source, null, parent.id, child.started_at, null, null, 1, 0, 0, 0);
  const insertMessage = db.prepare(
    `INSERT INTO messages (session_id, role, content, tool_calls, timestamp${version >= 2 ? ", finish_reason" : ""})
     VALUES (?, ?, ?, ?, ?${version >= 2 ? ", ?" : ""})`,
  );
  for (const m of messages) {
    const values = [m.session_id, m.role, m.content, m.tool_calls, m.timestamp];
    insertMessage.run(...(version >= 2 ? [...values, m.role === "assistant" ? "tool_calls" : null] : values));
  }
  for (const [id, title] of Object.entries(titles)) {
    db.prepare("INSERT OR IGNORE INTO sessions (id, source, started_at) VALUES (?, 'cli', 1600000200)").run(id);
    db.prepare("UPDATE sessions SET title = ? WHERE id = ?").run(title, id);
  }
}

export interface ColumnInfo {
  type: string;
  notnull: number;
  dflt_value: string | null;
  pk: number;
}

/** `PRAGMA table_info`, keyed by column name (order aside: migrated files append columns). */
export function columnsOf(db: Raw, table: string): Map<string, ColumnInfo> {
  const rows = db.prepare(`PRAGMA table_info(${table})`).all() as Array<ColumnInfo & { name: string; cid: number }>;
  return new Map(rows.map(({ name, cid: _position, ...info }) => [name, info]));
}

/** Column names in file order, to see that none is there twice. */
export function columnNames(db: Raw, table: string): string[] {
  return (db.prepare(`PRAGMA table_info(${table})`).all() as Array<{ name: string }>).map((c) => c.name);
}

export interface MasterEntry {
  type: string;
  name: string;
  tbl_name: string;
  sql: string | null;
}

/** Every schema object, sorted: two files with equal lists have the same schema. */
export function masterEntries(db: Raw): MasterEntry[] {
  return db.prepare("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name").all() as MasterEntry[];
}

/** The schema cookie: SQLite bumps it on every schema change, so an unchanged cookie means no DDL ran. */
export function schemaCookie(db: Raw): number {
  return db.pragma("schema_version", { simple: true }) as number;
}

/** All rows of `schema_version` (the reference keeps exactly one). */
export function versionRows(db: Raw): number[] {
  return db.prepare("SELECT version FROM schema_version").pluck().all() as number[];
}

export function objectExists(db: Raw, name: string): boolean {
  return db.prepare("SELECT 1 FROM sqlite_master WHERE name = ?").get(name) !== undefined;
}

/** A fresh file made from the SPEC §1 text alone: what every other file is compared with. */
export function buildSpecFile(path: string, version = 6): void {
  const db = new Database(path);
  try {
    db.pragma("journal_mode = wal");
    db.exec(V6_SCHEMA_SQL);
    db.prepare("INSERT INTO schema_version (version) VALUES (?)").run(version);
  } finally {
    db.close();
  }
}

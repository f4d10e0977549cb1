/**
 * The read side's corpus: a database of agent sessions (user requests, assistant answers, tool
 * calls and their outputs, some Chinese and Japanese) with sessiondb's schema and FTS index.
 * Written straight with better-sqlite3 in large transactions, and cached under the cache dir by
 * size, seed and generator version, so only the first run of a size pays for it.
 */
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { openConnection, type Connection } from "../src/sqlite/connection.js";
import { ensureSchema, SCHEMA_VERSION } from "../src/sqlite/schema.js";
import { catchUpCjkIndex, createCjkIndex, hasCjkIndex } from "../src/sqlite/cjk-index.js";
import { DEFAULT_RETRY, inWriteTransaction } from "../src/sqlite/transaction.js";
import { Random } from "./random.js";
import { CJK_TERM, COMMON_TERM, PHRASE, RARE_TERM, TextGenerator } from "./text-generator.js";

/** Bump when the generated text or layout changes, so stale cached corpora are not reused. */
const GENERATOR_VERSION = 1;
const MESSAGES_PER_TRANSACTION = 20_000;
const DAY_S = 86_400;
/** Messages per transaction while the CJK index is built. */
const CATCH_UP_CHUNK = 20_000;

export interface CorpusQueries {
  rare: string;
  common: string;
  phrase: string;
  cjk: string;
}
export type QueryKind = keyof CorpusQueries;

export interface Corpus {
  /** The cached file; copy it before writing to it. */
  path: string;
  messages: number;
  sessions: number;
  bytes: number;
  seed: number;
  /** The searches of the read side, as a user would type them. */
  queries: CorpusQueries;
  /** How many messages each query matches. */
  matches: Record<QueryKind, number>;
  /** Seconds spent generating; null when it came from the cache. */
  generatedInS: number | null;
  /** The CJK substring index (src/sqlite/cjk-index.ts), built into the cached file once. */
  cjkIndex: CjkIndexCost;
}

export interface CjkIndexCost {
  /** Messages with CJK in them: the only ones indexed. */
  indexedMessages: number;
  /** Pages of the index's tables, from SQLite's dbstat. */
  bytes: number;
  /** The FTS5 index every message is in, for comparison. */
  ftsBytes: number;
  /** Seconds a catch-up from nothing took (what a daemon's first start on such a file spends while idle). */
  buildS: number;
}

type CorpusMeta = Omit<Corpus, "path" | "generatedInS" | "cjkIndex"> & { cjkIndex?: CjkIndexCost };

export const CORPUS_QUERIES: CorpusQueries = { rare: RARE_TERM, common: COMMON_TERM, phrase: `"${PHRASE}"`, cjk: CJK_TERM };

/** The corpus of `messages` messages for `seed`, generated unless cached. */
export function ensureCorpus(messages: number, seed: number, cacheDir: string): Corpus {
  mkdirSync(cacheDir, { recursive: true });
  const stem = join(cacheDir, `corpus-${messages}-s${seed}-v${SCHEMA_VERSION}g${GENERATOR_VERSION}`);
  const path = `${stem}.db`;
  const metaPath = `${stem}.json`;
  if (existsSync(path) && existsSync(metaPath)) {
    const cached = JSON.parse(readFileSync(metaPath, "utf8")) as CorpusMeta;
    // A corpus cached before the CJK index existed, or with an earlier version of it, gets it now, once.
    if (cached.cjkIndex === undefined || !hasCurrentCjkIndex(path)) {
      const indexed = { ...cached, cjkIndex: buildCjkIndex(path), bytes: statSync(path).size };
      writeFileSync(metaPath, `${JSON.stringify(indexed, null, 2)}\n`);
      return { ...indexed, path, generatedInS: null };
    }
    return { ...cached, cjkIndex: cached.cjkIndex, path, generatedInS: null };
  }
  const started = performance.now();
  const tmp = `${stem}.tmp-${process.pid}.db`;
  rmSync(tmp, { force: true });
  const db = openConnection(tmp, { busyTimeoutMs: 5000 });
  let sessions: number;
  let matches: Record<QueryKind, number>;
  try {
    ensureSchema(db, DEFAULT_RETRY);
    // Each session row is written after its messages, when their counts are known.
    db.pragma("foreign_keys = OFF");
    db.pragma("synchronous = OFF");
    db.pragma("cache_size = -262144");
    sessions = generate(db, messages, seed);
    matches = countMatches(db);
    db.pragma("wal_checkpoint(TRUNCATE)");
    db.close();
  } catch (err) {
    db.close();
    for (const suffix of ["", "-wal", "-shm"]) rmSync(`${tmp}${suffix}`, { force: true });
    throw err;
  }
  const generatedInS = (performance.now() - started) / 1000;
  const cjkIndex = buildCjkIndex(tmp);
  const meta = { messages, sessions, bytes: statSync(tmp).size, seed, queries: CORPUS_QUERIES, matches, cjkIndex };
  renameSync(tmp, path);
  writeFileSync(metaPath, `${JSON.stringify(meta, null, 2)}\n`);
  return { ...meta, path, generatedInS };
}

const SOURCES = ["cli", "cli", "cli", "cli", "cli", "telegram", "telegram", "discord", "cron", "api"];
const MODELS = ["claude-sonnet-4", "gpt-4.1", "gemini-2.5-pro", "hermes-3-70b", "qwen3-coder"];
const END_REASONS = ["user_exit", "user_exit", "timeout", "error", "compression"];

/**
 * The longest session of a corpus: 80 messages (sessions of 42 on average), but 36 from 2,000,000
 * messages on (of 20: issue 27's listing corpus, 100,000 sessions of 2,000,000 messages).
 */
function longestSession(total: number): number {
  return total >= 2_000_000 ? 36 : 80;
}

/** Writes sessions of 4 to `longestSession` messages until `total` messages; returns the number of sessions. */
function generate(db: Connection, total: number, seed: number): number {
  const random = new Random(seed);
  const text = new TextGenerator(random);
  const insertSession = db.prepare(
    `INSERT INTO sessions (id, source, model, system_prompt, parent_session_id, started_at, ended_at, end_reason,
       message_count, tool_call_count, input_tokens, output_tokens, title)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const insertMessage = db.prepare(
    `INSERT INTO messages (session_id, role, content, tool_call_id, tool_calls, tool_name, timestamp, token_count, finish_reason)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const now = Date.now() / 1000;
  const spanS = 120 * DAY_S;
  let written = 0;
  let sessions = 0;
  let previous: { id: string; endedAt: number; compressed: boolean } | null = null;
  const longest = longestSession(total);
  db.exec("BEGIN");
  let inTransaction = 0;
  while (written < total) {
    const count = Math.min(total - written, random.int(4, longest));
    const startedAt = now - spanS + (spanS * written) / total;
    const id = `${new Date(startedAt * 1000).toISOString().slice(0, 19).replace(/[-:]/g, "").replace("T", "_")}_${random.hex(6)}`;
    const parent = previous?.compressed ? previous.id : null;
    let t = startedAt;
    let toolCalls = 0;
    for (let i = 0; i < count; ) {
      insertMessage.run(id, "user", text.userTurn(), null, null, null, (t += random.int(5, 120)), random.int(10, 300), null);
      i++;
      const calls = i < count && random.chance(0.6) ? Array.from({ length: random.int(1, 3) }, () => text.toolCall()) : [];
      const answer = calls.length > 0 ? text.prose(random.int(20, 200)) : text.assistantTurn();
      if (i < count) {
        insertMessage.run(id, "assistant", answer, null, calls.length > 0 ? JSON.stringify(calls) : null, null, (t += random.int(2, 40)), random.int(20, 900), calls.length > 0 ? "tool_calls" : "stop");
        i++;
      }
      for (const call of calls) {
        if (i >= count) break;
        insertMessage.run(id, "tool", text.toolOutput(call.function.name), call.id, null, call.function.name, (t += random.int(1, 30)), null, null);
        toolCalls++;
        i++;
      }
    }
    const ended = random.chance(0.97);
    const endReason = ended ? random.pick(END_REASONS) : null;
    insertSession.run(
      id, random.pick(SOURCES), random.pick(MODELS), "You are a helpful coding agent.", parent, startedAt, ended ? t + 1 : null,
      endReason, count, toolCalls, random.int(1_000, 200_000), random.int(500, 50_000),
      random.chance(0.4) ? `${text.prose(random.int(15, 40))} #${sessions + 1}` : null,
    );
    previous = { id, endedAt: t + 1, compressed: endReason === "compression" };
    written += count;
    sessions++;
    inTransaction += count;
    if (inTransaction >= MESSAGES_PER_TRANSACTION) {
      db.exec("COMMIT; BEGIN");
      inTransaction = 0;
    }
  }
  db.exec("COMMIT");
  return sessions;
}

function hasCurrentCjkIndex(path: string): boolean {
  const db = openConnection(path, { busyTimeoutMs: 5000, readonly: true });
  try {
    return hasCjkIndex(db);
  } finally {
    db.close();
  }
}

/** Creates the CJK index in the file and catches it up from nothing, as a daemon would; measures it. */
function buildCjkIndex(path: string): CjkIndexCost {
  const db = openConnection(path, { busyTimeoutMs: 5000 });
  try {
    const started = performance.now();
    inWriteTransaction(db, () => createCjkIndex(db));
    while (inWriteTransaction(db, () => catchUpCjkIndex(db, CATCH_UP_CHUNK)));
    const buildS = (performance.now() - started) / 1000;
    db.pragma("wal_checkpoint(TRUNCATE)");
    const pages = db.prepare("SELECT COALESCE(sum(pgsize), 0) FROM dbstat WHERE name LIKE ?").pluck();
    return {
      indexedMessages: db.prepare("SELECT count(*) FROM messages_cjk").pluck().get() as number,
      bytes: pages.get("messages_cjk%") as number,
      ftsBytes: pages.get("messages_fts%") as number,
      buildS,
    };
  } finally {
    db.close();
  }
}

function countMatches(db: Connection): Record<QueryKind, number> {
  const fts = db.prepare("SELECT COUNT(*) FROM messages_fts WHERE messages_fts MATCH ?").pluck();
  return {
    rare: fts.get(CORPUS_QUERIES.rare) as number,
    common: fts.get(CORPUS_QUERIES.common) as number,
    phrase: fts.get(CORPUS_QUERIES.phrase) as number,
    cjk: db.prepare("SELECT COUNT(*) FROM messages WHERE content LIKE ?").pluck().get(`%${CJK_TERM}%`) as number,
  };
}

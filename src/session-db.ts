/**
 * The one contract: the `SessionDB` interface and the shapes it reads and writes.
 * Direct mode (the file opened in this process) and the daemon client both implement it,
 * and one contract test suite runs against both.
 *
 * Rows keep the database's snake_case column names so exports stay interchangeable with the
 * reference Python implementation; options are camelCase.
 */

import type { DatabaseFiles } from "./database-files.js";
import type { DaemonControl } from "./protocol/control.js";

/** The 26 columns of `sessions`. */
export interface SessionRow {
  id: string;
  source: string;
  user_id: string | null;
  model: string | null;
  /** JSON text, as stored. */
  model_config: string | null;
  system_prompt: string | null;
  parent_session_id: string | null;
  started_at: number;
  ended_at: number | null;
  end_reason: string | null;
  message_count: number;
  tool_call_count: number;
  input_tokens: number | null;
  output_tokens: number | null;
  cache_read_tokens: number | null;
  cache_write_tokens: number | null;
  reasoning_tokens: number | null;
  billing_provider: string | null;
  billing_base_url: string | null;
  billing_mode: string | null;
  estimated_cost_usd: number | null;
  actual_cost_usd: number | null;
  cost_status: string | null;
  cost_source: string | null;
  pricing_version: string | null;
  title: string | null;
}

/** The 13 columns of `messages`; `tool_calls` is JSON-decoded (undecodable text gives `[]`). */
export interface MessageRow {
  id: number;
  session_id: string;
  role: string;
  content: string | null;
  tool_call_id: string | null;
  tool_calls: unknown;
  tool_name: string | null;
  timestamp: number;
  token_count: number | null;
  finish_reason: string | null;
  reasoning: string | null;
  reasoning_details: string | null;
  codex_reasoning_items: string | null;
}

/** A session row plus its messages: one line of an export. */
export interface SessionExport extends SessionRow {
  messages: MessageRow[];
}

/** A row of the rich listing. */
export interface RichSessionRow extends SessionRow {
  last_active: number;
  preview: string;
  /** Present when the row was projected onto the tip of its compression chain. */
  _lineage_root_id?: string;
}

/** One message in the OpenAI conversation shape the agent reloads. */
export interface ConversationMessage {
  role: string;
  content: string | null;
  tool_call_id?: string;
  tool_name?: string;
  tool_calls?: unknown;
  reasoning?: string;
  reasoning_details?: unknown;
  codex_reasoning_items?: unknown;
}

export interface ContextMessage {
  role: string;
  content: string;
}

export interface SearchHit {
  id: number;
  session_id: string;
  role: string;
  snippet: string;
  timestamp: number;
  tool_name: string | null;
  source: string;
  model: string | null;
  session_started: number;
  context: ContextMessage[];
}

export interface CreateSessionOptions {
  model?: string | null;
  modelConfig?: unknown;
  systemPrompt?: string | null;
  userId?: string | null;
  parentSessionId?: string | null;
}

export interface TokenUsage {
  inputTokens?: number | null;
  outputTokens?: number | null;
  cacheReadTokens?: number | null;
  cacheWriteTokens?: number | null;
  reasoningTokens?: number | null;
  model?: string | null;
  estimatedCostUsd?: number | null;
  actualCostUsd?: number | null;
  costStatus?: string | null;
  costSource?: string | null;
  pricingVersion?: string | null;
  billingProvider?: string | null;
  billingBaseUrl?: string | null;
  billingMode?: string | null;
}

export interface TokenUpdateOptions {
  /** Set the totals instead of adding to them (the gateway keeps running totals). */
  absolute?: boolean;
}

export interface NewMessage {
  role: string;
  content?: string | null;
  toolName?: string | null;
  toolCalls?: unknown;
  toolCallId?: string | null;
  tokenCount?: number | null;
  finishReason?: string | null;
  reasoning?: string | null;
  reasoningDetails?: unknown;
  codexReasoningItems?: unknown;
}

export interface ListSessionsOptions {
  source?: string | null;
  excludeSources?: string[] | null;
  /** Default 20. */
  limit?: number;
  /** Default 0. */
  offset?: number;
  /** Default false: only sessions without a parent. */
  includeChildren?: boolean;
  /** Default true: a compressed root shows its chain's tip. */
  projectCompressionTips?: boolean;
}

export interface SearchOptions {
  /** Only these sources; an empty array matches nothing. */
  sourceFilter?: string[] | null;
  /** Never these sources; an empty array filters nothing. */
  excludeSources?: string[] | null;
  roleFilter?: string[] | null;
  /** Default 20. */
  limit?: number;
  /** Default 0. */
  offset?: number;
}

export interface SearchSessionsOptions {
  source?: string | null;
  /** Default 20. */
  limit?: number;
  offset?: number;
}

export interface ExportOptions {
  source?: string | null;
}

/** What `importSession` did with one exported session. */
export interface ImportResult {
  /**
   * `"imported"`; `"exists"`: a session with this id is already there, nothing was written;
   * `"parent-missing"`: its parent session is not in the database (and `detachMissingParent`
   * was not given), nothing was written.
   */
  status: "imported" | "exists" | "parent-missing";
  /** Messages written. */
  messages: number;
  /**
   * The messages got new ids (in their exported order) because an exported id was taken.
   * Messages exported without an id always get a new one.
   */
  renumbered: boolean;
  /** Imported with `parent_session_id` NULL because the parent is missing (`detachMissingParent`). */
  parentDetached: boolean;
}

export interface ImportOptions {
  /** Import a session whose parent is missing anyway, with no parent. Default false. */
  detachMissingParent?: boolean;
}

/** Sessions and messages of one source, for statistics. */
export interface SourceCount {
  source: string;
  sessions: number;
  messages: number;
}

export interface PruneOptions {
  /** Default 90. */
  olderThanDays?: number;
  source?: string | null;
}

export type Mode = "direct" | "daemon";

/** The database behind a handle: a SQLite file, or a PostgreSQL database (a `postgres://` URL). */
export type Engine = "sqlite" | "postgres";

/** The session store. Every method is async; failures reject with `SessionDBError`. */
export interface SessionDB {
  /** Which implementation serves this handle. */
  readonly mode: Mode;
  /** Which database serves this handle, directly or through the daemon. */
  readonly engine: Engine;
  /** The database's files (real path, WAL, socket…), resolved once when the handle opened. */
  readonly files: DatabaseFiles;
  /** The daemon's control ops while a daemon serves this handle, else null. */
  readonly daemon: DaemonControl | null;

  /** Creates a session; a duplicate id is ignored (the first row wins). Returns the id. */
  createSession(id: string, source: string, opts?: CreateSessionOptions): Promise<string>;
  /** Creates the session only when it is missing; never overwrites. */
  ensureSession(id: string, source?: string, model?: string | null): Promise<void>;
  /** Ends a session; the first end wins. */
  endSession(id: string, endReason: string): Promise<void>;
  /** Clears `ended_at` and `end_reason`. */
  reopenSession(id: string): Promise<void>;
  updateSystemPrompt(id: string, systemPrompt: string): Promise<void>;
  /** Adds (or with `absolute`, sets) token counts and billing figures. */
  updateTokenCounts(id: string, usage: TokenUsage, opts?: TokenUpdateOptions): Promise<void>;
  getSession(id: string): Promise<SessionRow | null>;
  /** An exact id, or a unique id prefix; otherwise null. */
  resolveSessionId(idOrPrefix: string): Promise<string | null>;
  /**
   * The ids that start with `prefix` (ASCII case-insensitive, `%` and `_` literal, as
   * `resolveSessionId`), newest first, at most `limit` (default 20, max 1000): says why a prefix
   * did not resolve (no match, or which sessions share it).
   */
  sessionIdsByPrefix(prefix: string, opts?: { limit?: number }): Promise<string[]>;
  /** Sets (or with null clears) a title; false when the session is missing. */
  setSessionTitle(id: string, title: string | null): Promise<boolean>;
  getSessionTitle(id: string): Promise<string | null>;
  getSessionByTitle(title: string): Promise<SessionRow | null>;
  /** The newest `"<title> #N"` session if any, else the exact title's session, else null. */
  resolveSessionByTitle(title: string): Promise<string | null>;
  getNextTitleInLineage(baseTitle: string): Promise<string>;
  /** Follows compression splits to the live end of a conversation. */
  getCompressionTip(id: string): Promise<string>;
  listSessionsRich(opts?: ListSessionsOptions): Promise<RichSessionRow[]>;
  /** Appends a message and bumps the session's counters. Returns the message id. */
  appendMessage(sessionId: string, msg: NewMessage): Promise<number>;
  getMessages(sessionId: string): Promise<MessageRow[]>;
  getMessagesAsConversation(sessionId: string): Promise<ConversationMessage[]>;
  clearMessages(sessionId: string): Promise<void>;
  searchMessages(query: string, opts?: SearchOptions): Promise<SearchHit[]>;
  searchSessions(opts?: SearchSessionsOptions): Promise<SessionRow[]>;
  sessionCount(opts?: { source?: string | null }): Promise<number>;
  messageCount(opts?: { sessionId?: string | null }): Promise<number>;
  /** Sessions and messages per source, the most sessions first. */
  sourceCounts(): Promise<SourceCount[]>;
  exportSession(id: string): Promise<SessionExport | null>;
  /** Every session with its messages, newest first, streamed. */
  exportAll(opts?: ExportOptions): AsyncIterable<SessionExport>;
  /**
   * Restores one exported session (a line of `exportAll`) in one transaction, as it was: all 26
   * columns (the title cleaned as `setSessionTitle` does), its messages with their timestamps,
   * `message_count` and `tool_call_count` recomputed from those messages. Nothing is written when
   * the id already exists (`"exists"`) or the parent is missing (`"parent-missing"`, unless
   * `detachMissingParent`). The messages keep their exported ids when no message holds any of
   * them (so an export restored into an empty file exports byte for byte the same), else all of
   * them get new ids in their exported `(timestamp, id)` order. A title another session has
   * fails with `TITLE_IN_USE`; a malformed session with `INVALID_ARGUMENT`.
   */
  importSession(session: SessionExport, opts?: ImportOptions): Promise<ImportResult>;
  /** Deletes a session and its messages; its children are orphaned. */
  deleteSession(id: string): Promise<boolean>;
  /** Deletes ended sessions older than the cutoff. Returns how many. */
  pruneSessions(opts?: PruneOptions): Promise<number>;
  /** Idempotent; lets queued work finish. Calls after it reject with `CLOSED`. */
  close(): Promise<void>;
}

/** Direct mode's patience for the write lock (SPEC §4). */
export interface RetryOptions {
  /** How long a write keeps trying for the lock before it fails with BUSY, in ms. Default 20000. */
  budgetMs?: number;
  /** An optional cap on the attempts within the budget. Default: none. */
  maxAttempts?: number;
  /** The random pause between attempts: 20–150 ms by default, its range growing after 2 s of waiting. */
  minDelayMs?: number;
  maxDelayMs?: number;
}

export interface OpenOptions {
  /**
   * The database file, or a PostgreSQL database as a `postgres://` / `postgresql://` URL.
   * Default: `$SESSIONDB_PATH`, else `$HERMES_HOME/state.db`, else `~/.hermes/state.db`.
   */
  path?: string;
  /** Default "auto": the daemon when one answers for this file, else direct. */
  mode?: "auto" | "daemon" | "direct";
  /** Default: derived from the database path. */
  socketPath?: string;
  /** Direct mode's SQLite busy timeout. Default 1000. */
  busyTimeoutMs?: number;
  /** Direct mode's write retry. Default: a 20 s budget, 20–150 ms pauses growing after 2 s. */
  retry?: RetryOptions;
  /** Direct mode's PASSIVE checkpoint cadence. Default 50. */
  checkpointEveryNWrites?: number;
  /**
   * Daemon mode: how long a request may take, in ms. Default 30000. The daemon does not start a
   * request past it (`TIMEOUT`: not applied); a write sent and not answered by then (plus 2 s)
   * fails with `OUTCOME_UNKNOWN`.
   */
  requestTimeoutMs?: number;
  /** Daemon mode: how long to wait for the socket to answer. Default 1000. */
  connectTimeoutMs?: number;
  /**
   * Modes "daemon" and "auto": when no daemon answers, start one (`sessiondb serve --idle-exit
   * 600`, found through `$SESSIONDB_BIN`, else this package's CLI) and wait up to 5 s for it.
   * Default false: "auto" falls back to direct mode instead.
   */
  autostart?: boolean;
  /**
   * Whether a missing or empty (0-byte) file may be initialised. Default true. With false a
   * missing database is `NOT_FOUND` (nothing is created, nor its directory) and an empty one
   * `SCHEMA` (left as it is), in every mode that would open the file.
   */
  create?: boolean;
}

/**
 * The one contract: the `SessionDB` interface. Direct mode (the file opened in this process) and
 * the daemon client both implement it, and one contract test suite runs against both. The shapes
 * it reads and writes are kept by topic (session-types.ts, message-types.ts, open-options.ts)
 * and re-exported here.
 *
 * Rows keep the database's snake_case column names so exports stay interchangeable with the
 * reference Python implementation; options are camelCase.
 */
import type { DatabaseFiles } from "./database-files.js";
import type { ConversationMessage, MessageRow, NewMessage, SearchHit, SearchOptions } from "./message-types.js";
import type { DaemonControl } from "./daemon-control.js";
import type { Engine } from "./engine-kind.js";
import type { WatchEvent, WatchOptions } from "./watch-types.js";
import type {
  CreateSessionOptions, ExportOptions, ImportOptions, ImportResult, ListSessionsOptions, PruneOptions, RichSessionRow,
  SearchSessionsOptions, SessionExport, SessionRow, SourceCount, TokenUpdateOptions, TokenUsage,
} from "./session-types.js";

export type {
  CreateSessionOptions, ExportOptions, ImportOptions, ImportResult, ListSessionsOptions, PruneOptions, RichSessionRow,
  SearchSessionsOptions, SessionExport, SessionRow, SourceCount, TokenUpdateOptions, TokenUsage,
} from "./session-types.js";
export type { ContextMessage, ConversationMessage, MessageRow, NewMessage, SearchHit, SearchOptions } from "./message-types.js";
export type { OpenOptions, RetryOptions, SpoolOptions } from "./open-options.js";
export type { SessionChange, WatchEvent, WatchOptions } from "./watch-types.js";

export type Mode = "direct" | "daemon";

export type { Engine } from "./engine-kind.js";

/**
 * The last argument of every write (issue 25). `idempotencyKey` (1–256 characters): the write is
 * applied at most once per key; the same key again answers the first result (the same message
 * id) without applying anything, and the same key with another op or other arguments rejects
 * with `IDEMPOTENCY_CONFLICT`. Keys are kept at least `keyRetentionHours` (default 24). Left
 * out, the daemon client and auto mode give the write a key of their own (`auto-<time>-<uuid>-<n>`), so
 * they can send it again after a lost connection, a daemon restart or a fail-over.
 */
export interface WriteOptions {
  idempotencyKey?: string;
}

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
  createSession(id: string, source: string, opts?: CreateSessionOptions, write?: WriteOptions): Promise<string>;
  /** Creates the session only when it is missing; never overwrites. */
  ensureSession(id: string, source?: string, model?: string | null, write?: WriteOptions): Promise<void>;
  /** Ends a session; the first end wins. */
  endSession(id: string, endReason: string, write?: WriteOptions): Promise<void>;
  /** Clears `ended_at` and `end_reason`. */
  reopenSession(id: string, write?: WriteOptions): Promise<void>;
  updateSystemPrompt(id: string, systemPrompt: string, write?: WriteOptions): Promise<void>;
  /** Adds (or with `absolute`, sets) token counts and billing figures. */
  updateTokenCounts(id: string, usage: TokenUsage, opts?: TokenUpdateOptions, write?: WriteOptions): Promise<void>;
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
  setSessionTitle(id: string, title: string | null, write?: WriteOptions): Promise<boolean>;
  getSessionTitle(id: string): Promise<string | null>;
  getSessionByTitle(title: string): Promise<SessionRow | null>;
  /** The newest `"<title> #N"` session if any, else the exact title's session, else null. */
  resolveSessionByTitle(title: string): Promise<string | null>;
  getNextTitleInLineage(baseTitle: string): Promise<string>;
  /** Follows compression splits to the live end of a conversation. */
  getCompressionTip(id: string): Promise<string>;
  listSessionsRich(opts?: ListSessionsOptions): Promise<RichSessionRow[]>;
  /** Appends a message and bumps the session's counters. Returns the message id. */
  appendMessage(sessionId: string, msg: NewMessage, write?: WriteOptions): Promise<number>;
  getMessages(sessionId: string): Promise<MessageRow[]>;
  getMessagesAsConversation(sessionId: string): Promise<ConversationMessage[]>;
  clearMessages(sessionId: string, write?: WriteOptions): Promise<void>;
  /**
   * Removes the session's last message (the newest by timestamp, then id) and returns it as
   * `getMessages` shows it, in one write; null when the session has none. The session's
   * `message_count` and `tool_call_count` go down with it. (The OpenAI Agents SDK's `pop_item`.)
   */
  popMessage(sessionId: string, write?: WriteOptions): Promise<MessageRow | null>;
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
  importSession(session: SessionExport, opts?: ImportOptions, write?: WriteOptions): Promise<ImportResult>;
  /** Deletes a session and its messages; its children are orphaned. */
  deleteSession(id: string, write?: WriteOptions): Promise<boolean>;
  /** Deletes ended sessions older than the cutoff. Returns how many. */
  pruneSessions(opts?: PruneOptions, write?: WriteOptions): Promise<number>;
  /**
   * The change feed (issue 26): messages appended and sessions changed, by this handle or any
   * other process, in commit order, until the loop breaks, `signal` aborts or the handle closes.
   * With `afterMessageId`, the messages past it are replayed first, then live ones follow with
   * no gap and no duplicate; a `resync` event says to re-read and carry on. See docs/library.md,
   * "Watching sessions".
   */
  watch(opts?: WatchOptions): AsyncIterable<WatchEvent>;
  /** Idempotent; lets queued work finish. Calls after it reject with `CLOSED`. */
  close(): Promise<void>;
}

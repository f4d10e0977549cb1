/**
 * The change feed (issue 26): what `SessionDB.watch` takes and yields. Events come in commit
 * order; message ids are monotonic (AUTOINCREMENT), so the last message id seen is a cursor a
 * watcher resumes from.
 */
import type { MessageRow } from "./message-types.js";
import type { SessionRow } from "./session-types.js";

/**
 * What changed in a session. `created`: a new row (createSession, ensureSession, importSession);
 * `ended` / `reopened`: `ended_at` set / cleared; `titled`: the title set or cleared; `tokens`:
 * token counts or billing figures; `system_prompt`: the system prompt; `cleared`: messages of it
 * were removed (clearMessages, popMessage), re-read them; `deleted`: the row is gone
 * (deleteSession, pruneSessions).
 */
export type SessionChange = "created" | "ended" | "reopened" | "titled" | "tokens" | "system_prompt" | "cleared" | "deleted";

/**
 * One event of the feed. `message`: a message appended (the row as `getMessages` gives it).
 * `session`: a session changed (its row now, null once deleted). `resync`: the watcher fell
 * behind (its buffer passed the bound) or the server cannot tell what changed: re-read what you
 * show, then carry on; the events that follow are those after message id `afterMessageId`.
 */
export type WatchEvent =
  | { type: "message"; message: MessageRow }
  | { type: "session"; change: SessionChange; sessionId: string; session: SessionRow | null }
  | { type: "resync"; afterMessageId: number };

export interface WatchOptions {
  /** Only this session's events. Left out: every session's (of `source`, when given). */
  sessionId?: string | null;
  /** Only the events of sessions of this source (with no `sessionId`). */
  source?: string | null;
  /**
   * Replay the messages with a greater id (for the filter) from the table first, then follow
   * live ones with no gap and no duplicate. Left out: from now (the newest message id).
   */
  afterMessageId?: number | null;
  /** Aborting it ends the iterator. */
  signal?: AbortSignal;
}

/**
 * What changed in the file since the last look, as feed events (issue 26): messages by id past a
 * cursor, and sessions by a diff of their mutable columns (operations/session-changes.ts). Direct
 * mode's watchers read it on a connection of their own; the daemon's writer on its own one, for
 * its batches and for commits other processes made.
 */
import type { MessageRow } from "../message-types.js";
import type { SessionRow } from "../session-types.js";
import { decodeJson, MESSAGE_COLUMNS, MESSAGE_SELECT, SESSION_SELECT } from "../operations/rows.js";
import { sessionChanges, toSessionMark, type SessionMark, type SessionMarkRow } from "../operations/session-changes.js";
import type { FeedEvent, WatchFilter } from "../operations/watch-filter.js";
import type { SessionChange, WatchEvent } from "../watch-types.js";
import { sql, type Connection } from "./connection.js";

export type { FeedEvent };

/** Messages read at most per look: a backlog comes in pages. */
export const MESSAGE_PAGE = 500;

const MARK_COLUMNS = `id, source, ended_at,  title,
  quote(input_tokens) || ',' || quote(output_tokens) || ',' || quote(cache_read_tokens) || ',' || quote(cache_write_tokens)
    || ',' || quote(reasoning_tokens) || ',' || quote(estimated_cost_usd) || ',' || quote(actual_cost_usd) || ',' || quote(model)
    || ',' || quote(billing_provider) || ',' || quote(billing_base_url) || ',' || quote(billing_mode) || ',' || quote(cost_status)
    || ',' || quote(cost_source) || ',' || quote(pricing_version) AS tokens,
  ifnull(length(system_prompt) || ':' || quote(substr(system_prompt, 1, 32)) || quote(substr(system_prompt, -32)), 'null') AS prompt,
  message_count, tool_call_count`;

/** The newest message id (0 for none): where a watcher that gives no cursor starts. */
export function newestMessageId(db: Connection): number {
  return sql(db, "SELECT ifnull(max(id), 0) FROM messages").pluck().get() as number;
}

/** Whether another connection committed since the last call on this one (`PRAGMA data_version`). */
export function dataVersion(db: Connection): number {
  return db.pragma("data_version", { simple: true }) as number;
}

/** One session's row, or null. */
function sessionRow(db: Connection, id: string): SessionRow | null {
  return (sql(db, `SELECT ${SESSION_SELECT} FROM sessions s WHERE s.id = ?`).get(id) as SessionRow | undefined) ?? null;
}

/** messagesAfter's statements, one per kind of filter (made once: the feed runs one for every commit). */
const messagesWhere = (where: string) => `SELECT ${MESSAGE_SELECT}, s.source AS _source FROM messages m LEFT JOIN sessions s ON s.id = m.session_id
     WHERE m.id > ? AND m.id <= ? ${where} ORDER BY m.id LIMIT ?`;
const MESSAGES_OF_ALL = messagesWhere("");
const MESSAGES_OF_SESSION = messagesWhere("AND m.session_id = ?");
const MESSAGES_OF_SOURCE = messagesWhere("AND s.source = ?");

/**
 * The filter's messages with `after < id <= upto`, oldest first, at most `limit`: a watch's replay
 * (the daemon's readers give it up to where its live events start) and each look's page.
 */
export function messagesAfter(db: Connection, filter: WatchFilter, after: number, upto: number, limit: number): FeedEvent[] {
  const { sessionId, source } = filter;
  const key = sessionId ?? source;
  const text = sessionId !== null ? MESSAGES_OF_SESSION : source !== null ? MESSAGES_OF_SOURCE : MESSAGES_OF_ALL;
  const rows = sql(db, text).raw(true).all(...(key === null ? [after, upto, limit] : [after, upto, key, limit])) as unknown[][];
  return rows.map((values) => ({ event: { type: "message", message: messageOf(values) }, source: values[MESSAGE_COLUMNS.length] as string | null }));
}

/**
 * A message row from its values in MESSAGE_COLUMNS' order, as decodeMessage makes it from a
 * row object (the same keys, in the same order): the feed reads every message committed, and
 * rows as arrays, built without the two object spreads per row, cost it about half as much.
 */
function messageOf(values: unknown[]): MessageRow {
  const row: Record<string, unknown> = {};
  for (let i = 0; i < MESSAGE_COLUMNS.length; i++) row[MESSAGE_COLUMNS[i]!] = values[i];
  if (row.tool_calls) row.tool_calls = decodeJson(row.tool_calls as string, []);
  return row as unknown as MessageRow;
}

/**
 * A filter's view of the file: the cursor (the last message id read) and the marks of its
 * sessions, so each look gives what changed since the one before.
 */
export class ChangeReader {
  readonly #filter: WatchFilter;
  #cursor: number;
  #marks: Map<string, SessionMark>;

  /** Reads the marks (and, with no cursor in the filter, the newest message id) now. */
  constructor(db: Connection, filter: WatchFilter) {
    this.#filter = filter;
    this.#cursor = filter.afterMessageId ?? newestMessageId(db);
    this.#marks = this.#readMarks(db);
  }

  /** The id of the last message read. */
  get cursor(): number {
    return this.#cursor;
  }

  /** The source of a session as last read (null: not known). */
  sourceOf(id: string): string | null {
    return this.#marks.get(id)?.source ?? null;
  }

  /**
   * One look, on one snapshot (the caller's read transaction): sessions created, then messages
   * past the cursor (a page at most), then the other session changes. `more`: the page was full.
   */
  look(db: Connection): { events: FeedEvent[]; more: boolean } {
    const sessions = this.#diff(db, this.#readMarks(db), null);
    const messages = this.#messages(db);
    return { events: [...sessions.created, ...messages, ...sessions.changed], more: messages.length === MESSAGE_PAGE };
  }

  /**
   * Messages past the cursor and the changes of the sessions named (with every session's when
   * `all`): what a write of the caller's own changed, read in its transaction.
   */
  lookAt(db: Connection, ids: Iterable<string>, all: boolean): FeedEvent[] {
    const sessions = all ? this.#diff(db, this.#readMarks(db), null) : this.#diff(db, this.#readSome(db, ids), ids);
    const messages: FeedEvent[] = [];
    for (let page = this.#messages(db); ; page = this.#messages(db)) {
      for (const m of page) messages.push(m);
      if (page.length < MESSAGE_PAGE) break;
    }
    return [...sessions.created, ...messages, ...sessions.changed];
  }

  /** Starts again from `cursor` with the marks as they are now (after a resync). */
  reset(db: Connection, cursor: number): void {
    this.#cursor = cursor;
    this.#marks = this.#readMarks(db);
  }

  #messages(db: Connection): FeedEvent[] {
    const page = messagesAfter(db, this.#filter, this.#cursor, Number.MAX_SAFE_INTEGER, MESSAGE_PAGE);
    const last = page.at(-1);
    if (last !== undefined) this.#cursor = (last.event as { message: MessageRow }).message.id;
    return page;
  }

  #readMarks(db: Connection): Map<string, SessionMark> {
    const { sessionId, source } = this.#filter;
    const rows = (sessionId !== null
      ? sql(db, `SELECT ${MARK_COLUMNS} FROM sessions WHERE id = ?`).all(sessionId)
      : source !== null
        ? sql(db, `SELECT ${MARK_COLUMNS} FROM sessions WHERE source = ?`).all(source)
        : sql(db, `SELECT ${MARK_COLUMNS} FROM sessions`).all()) as SessionMarkRow[];
    return new Map(rows.map((row) => [row.id, toSessionMark(row)]));
  }

  #readSome(db: Connection, ids: Iterable<string>): Map<string, SessionMark> {
    const marks = new Map<string, SessionMark>();
    const { sessionId, source } = this.#filter;
    for (const id of ids) {
      if (sessionId !== null && id !== sessionId) continue;
      const row = sql(db, `SELECT ${MARK_COLUMNS} FROM sessions WHERE id = ?`).get(id) as SessionMarkRow | undefined;
      if (row !== undefined && (source === null || row.source === source)) marks.set(id, toSessionMark(row));
    }
    return marks;
  }

  /**
   * The changes from the marks held to `now` (every session's when `ids` is null, else those
   * named), which become the marks held.
   */
  #diff(db: Connection, now: Map<string, SessionMark>, ids: Iterable<string> | null): { created: FeedEvent[]; changed: FeedEvent[] } {
    const created: FeedEvent[] = [];
    const changed: FeedEvent[] = [];
    const before = this.#marks;
    const event = (sessionId: string, change: SessionChange, source: string | null, row: SessionRow | null): FeedEvent =>
      ({ event: { type: "session", change, sessionId, session: row }, source });
    const compare = (id: string) => {
      const old = before.get(id);
      const mark = now.get(id);
      const changes = sessionChanges(old, mark);
      if (changes.length === 0) return;
      const row = mark === undefined ? null : sessionRow(db, id);
      const source = mark?.source ?? old?.source ?? null;
      for (const change of changes) (change === "created" ? created : changed).push(event(id, change, source, row));
    };
    if (ids === null) {
      for (const id of now.keys()) compare(id);
      for (const id of before.keys()) if (!now.has(id)) compare(id);
      this.#marks = now;
    } else {
      for (const id of new Set(ids)) {
        compare(id);
        const mark = now.get(id);
        if (mark === undefined) before.delete(id);
        else before.set(id, mark);
      }
    }
    return { created, changed };
  }
}

/**
 * What PostgreSQL write transactions committed, as feed events (issue 26): a connection of its
 * own LISTENs on the schema's watch channel (pg-change-notes.ts says what writers send). Each
 * notification names the messages appended and the sessions touched by one committed
 * transaction, of any process writing the database through sessiondb; the rows are read on one
 * snapshot and handed on in order. Messages are read by the ids notified, in the order their
 * transactions committed (a sequence hands out ids before commit, so commit order is not id
 * order between writers); sessions by a diff of their mutable columns against the last look
 * (operations/session-changes.ts), which is how every mode names a change. Used by direct mode's
 * watches (pg-change-feed.ts) and the daemon's feed (daemon/pg-feed.ts).
 */
import { SessionDBError } from "../errors.js";
import { decodeMessage, MESSAGE_SELECT, SESSION_SELECT } from "../operations/rows.js";
import { sessionChanges, toSessionMark, type SessionMark, type SessionMarkRow } from "../operations/session-changes.js";
import type { FeedEvent, WatchFilter } from "../operations/watch-filter.js";
import { changeKey, inWriteOrder } from "../operations/write-changes.js";
import type { MessageRow } from "../message-types.js";
import type { SessionRow } from "../session-types.js";
import type { WatchEvent } from "../watch-types.js";
import { openPgListenClient, type PgListenClient, type PgPool, type PgQueryable } from "./pg-connection.js";
import { CHANNEL_SQL, type ChangePayload } from "./pg-change-notes.js";
import { toPgSessionDBError } from "./pg-errors.js";
import { inPgReadSnapshot } from "./pg-snapshot.js";

const MARK_SELECT = `SELECT id, source, ended_at, title,
  concat_ws(',', quote_nullable(input_tokens), quote_nullable(output_tokens), quote_nullable(cache_read_tokens),
    quote_nullable(cache_write_tokens), quote_nullable(reasoning_tokens), quote_nullable(estimated_cost_usd),
    quote_nullable(actual_cost_usd), quote_nullable(model), quote_nullable(billing_provider), quote_nullable(billing_base_url),
    quote_nullable(billing_mode), quote_nullable(cost_status), quote_nullable(cost_source), quote_nullable(pricing_version)) AS tokens,
  CASE WHEN system_prompt IS NULL THEN 'null'
    ELSE length(system_prompt) || ':' || quote_literal(left(system_prompt, 32)) || quote_literal(right(system_prompt, 32)) END AS prompt,
  message_count, tool_call_count FROM sessions`;

type StoredMessage = Parameters<typeof decodeMessage>[0] & { _source: string | null };

const MESSAGE_FROM = `SELECT ${MESSAGE_SELECT}, s.source AS _source FROM messages m LEFT JOIN sessions s ON s.id = m.session_id`;

function sourced(row: StoredMessage): FeedEvent {
  const { _source, ...stored } = row;
  return { event: { type: "message", message: decodeMessage(stored) as MessageRow }, source: _source };
}

/** The newest message id (0 for none). */
export async function newestMessageId(db: PgQueryable): Promise<number> {
  try {
    return ((await db.query("SELECT coalesce(max(id), 0) AS n FROM messages")).rows[0] as { n: number }).n;
  } catch (err) {
    throw toPgSessionDBError(err);
  }
}

/** The filter's messages with `after < id` (and `id <= upto` unless null), oldest first, at most `limit`. */
export async function messagesAfter(db: PgQueryable, filter: WatchFilter, after: number, upto: number | null, limit: number): Promise<FeedEvent[]> {
  const { sessionId, source } = filter;
  const values: unknown[] = [after, upto ?? Number.MAX_SAFE_INTEGER];
  let where = "";
  if (sessionId !== null) {
    values.push(sessionId);
    where = "AND m.session_id = $3";
  } else if (source !== null) {
    values.push(source);
    where = "AND s.source = $3";
  }
  try {
    const { rows } = await db.query(`${MESSAGE_FROM} WHERE m.id > $1 AND m.id <= $2 ${where} ORDER BY m.id LIMIT ${Math.floor(limit)}`, values);
    return (rows as StoredMessage[]).map(sourced);
  } catch (err) {
    throw toPgSessionDBError(err);
  }
}

export class PgChanges {
  readonly #listener: PgListenClient;
  readonly #reads: PgPool;
  readonly #onEvents: (events: FeedEvent[]) => void;
  #onFailure: (err: SessionDBError) => void = () => undefined;
  #marks: Map<string, SessionMark>;
  /** The newest message id read (where a reread notice starts). */
  #newest: number;
  #pending: ChangePayload[] = [];
  #running: Promise<void> | null = null;
  #failure: SessionDBError | null = null;
  #closed = false;

  private constructor(listener: PgListenClient, reads: PgPool, onEvents: (events: FeedEvent[]) => void, marks: Map<string, SessionMark>, newest: number) {
    this.#listener = listener;
    this.#reads = reads;
    this.#onEvents = onEvents;
    this.#marks = marks;
    this.#newest = newest;
  }

  /**
   * LISTENs on a connection of its own to the database at `url`, then reads every session's
   * marks and the newest message id: each transaction committed from then on reaches `onEvents`
   * as its events. `reads`: the pool the rows are read on.
   */
  static async open(url: string, reads: PgPool, applicationName: string, onEvents: (events: FeedEvent[]) => void): Promise<PgChanges> {
    let listener: PgListenClient | null = null;
    try {
      listener = await openPgListenClient(url, applicationName);
      const [{ channel }] = (await listener.query(`SELECT ${CHANNEL_SQL} AS channel`)).rows as [{ channel: string }];
      await listener.query(`LISTEN "${channel}"`);
      // Heard before the marks are read: looked at once they are (their session changes are in
      // the marks already; their messages are at or before the newest id).
      const early: string[] = [];
      let heard = (payload: string): void => void early.push(payload);
      listener.onNotification((_channel, payload) => heard(payload));
      const { marks, newest } = await inPgReadSnapshot(reads, async (db) => ({ marks: await readMarks(db, null), newest: await newestMessageId(db) }));
      const changes = new PgChanges(listener, reads, onEvents, marks, newest);
      heard = (payload) => changes.#heard(payload);
      listener.onLost((err) => changes.#fail(new SessionDBError("UNAVAILABLE", `the watch connection to PostgreSQL was lost (${err.message}); watch again from the last message id seen`, { cause: err })));
      for (const payload of early) changes.#heard(payload);
      return changes;
    } catch (err) {
      await listener?.end();
      throw toPgSessionDBError(err);
    }
  }

  /** The newest message id when it opened, or read since: every later message reaches `onEvents`. */
  get newest(): number {
    return this.#newest;
  }

  /** Whether it still listens (its connection is up and it was not closed). */
  get live(): boolean {
    return this.#failure === null && !this.#closed;
  }

  /** Called once if the connection fails (then no more events come). */
  onFailure(fn: (err: SessionDBError) => void): void {
    this.#onFailure = fn;
    if (this.#failure !== null) fn(this.#failure);
  }

  /** Stops listening and closes the connection. Idempotent. */
  async close(): Promise<void> {
    this.#closed = true;
    await this.#running?.catch(() => undefined);
    await this.#listener.end();
  }

  #heard(payload: string): void {
    try {
      this.#pending.push(JSON.parse(payload) as ChangePayload);
    } catch {
      this.#pending.push({ r: 1 }); // not ours to read: compare everything
    }
    this.#running ??= this.#drain();
  }

  /** Reads what the notifications heard so far name, then hands the events on. */
  async #drain(): Promise<void> {
    try {
      while (this.#pending.length > 0 && this.live) {
        const payloads = this.#pending.splice(0);
        const events = await inPgReadSnapshot(this.#reads, (db) => this.#look(db, payloads));
        if (events.length > 0 && this.live) this.#onEvents(events);
      }
    } catch (err) {
      this.#fail(toPgSessionDBError(err));
    } finally {
      this.#running = null;
    }
  }

  /** One look on one snapshot: sessions created, the messages notified, the other session changes. */
  async #look(db: PgQueryable, payloads: ChangePayload[]): Promise<FeedEvent[]> {
    const ids: number[] = [];
    const sessions = new Set<string>();
    let reread = false;
    // Where each event was made (operations/write-changes.ts): at its notification's place, in
    // commit order; a notification's other changes after its messages, in the order they were made.
    const madeAt = new Map<string | number, number>();
    payloads.forEach((p, n) => {
      if (p.r !== undefined) reread = true;
      for (const id of p.m ?? []) {
        ids.push(id);
        if (!madeAt.has(id)) madeAt.set(id, n);
      }
      for (const id of p.s ?? []) sessions.add(id);
      const made = p.c ?? [];
      made.forEach(([i, change], place) => {
        const key = changeKey(change, p.s?.[i] ?? "");
        if (!madeAt.has(key)) madeAt.set(key, change === "created" ? n : n + (place + 1) / (made.length + 1));
      });
    });
    const messages: FeedEvent[] = [];
    if (ids.length > 0) {
      const rows = (await db.query(`${MESSAGE_FROM} WHERE m.id = ANY($1::bigint[])`, [ids])).rows as StoredMessage[];
      const byId = new Map(rows.map((row) => [row.id, row]));
      for (const id of new Set(ids)) {
        const row = byId.get(id);
        if (row !== undefined) messages.push(sourced(row)); // gone already (deleted since): nothing to tell
      }
    }
    if (reread) {
      // A prune names no ids; whatever else is past the newest id read comes too.
      const known = new Set(ids);
      const rows = (await db.query(`${MESSAGE_FROM} WHERE m.id > $1 ORDER BY m.id`, [this.#newest])).rows as StoredMessage[];
      for (const row of rows) if (!known.has(row.id)) messages.push(sourced(row));
    }
    for (const { event } of messages) {
      if (event.type !== "message") continue;
      this.#newest = Math.max(this.#newest, event.message.id);
      // Its session's counters moved: its mark follows, so a later clear is told as one.
      sessions.add(event.message.session_id);
    }
    const now = reread ? await readMarks(db, null) : await readMarks(db, [...sessions]);
    const touched = reread ? new Set([...now.keys(), ...this.#marks.keys()]) : sessions;
    const changedIds = [...touched].filter((id) => now.has(id) && sessionChanges(this.#marks.get(id), now.get(id)).length > 0);
    const rows = await sessionRows(db, changedIds);
    const created: FeedEvent[] = [];
    const changed: FeedEvent[] = [];
    for (const id of touched) {
      const before = this.#marks.get(id);
      const after = now.get(id);
      const source = after?.source ?? before?.source ?? null;
      for (const change of sessionChanges(before, after)) {
        const event: WatchEvent = { type: "session", change, sessionId: id, session: after === undefined ? null : (rows.get(id) ?? null) };
        (change === "created" ? created : changed).push({ event, source });
      }
      if (after === undefined) this.#marks.delete(id);
      else this.#marks.set(id, after);
    }
    return inWriteOrder([...created, ...messages, ...changed], madeAt);
  }

  #fail(err: SessionDBError): void {
    if (this.#failure !== null || this.#closed) return;
    this.#failure = err;
    void this.#listener.end();
    this.#onFailure(err);
  }
}

/** Marks of the sessions named (null: of every session). */
async function readMarks(db: PgQueryable, ids: string[] | null): Promise<Map<string, SessionMark>> {
  if (ids !== null && ids.length === 0) return new Map();
  const result = ids === null ? await db.query(MARK_SELECT) : await db.query(`${MARK_SELECT} WHERE id = ANY($1::text[])`, [ids]);
  return new Map((result.rows as unknown as SessionMarkRow[]).map((row) => [row.id, toSessionMark(row)]));
}

async function sessionRows(db: PgQueryable, ids: string[]): Promise<Map<string, SessionRow>> {
  if (ids.length === 0) return new Map();
  const result = await db.query(`SELECT ${SESSION_SELECT} FROM sessions s WHERE s.id = ANY($1::text[])`, [ids]);
  return new Map((result.rows as unknown as SessionRow[]).map((row) => [row.id, row]));
}

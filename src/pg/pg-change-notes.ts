/**
 * What a PostgreSQL write transaction tells the watchers (issue 26): before its COMMIT, the writer
 * (direct mode, or the daemon's group-commit writer) sends `pg_notify` on the database's watch
 * channel with what it changed: the ids of the messages it appended and the ids of the sessions
 * it touched. PostgreSQL delivers a transaction's notifications at its commit, in commit order,
 * and drops them with a rollback (a savepoint's too), so a watcher (pg-change-feed.ts) hears of
 * exactly what committed, from every process writing the database, in the order it committed.
 */
import type { WriteOpName } from "../operation-catalogue.js";
import type { ImportResult } from "../session-db.js";
import type { SessionChange } from "../watch-types.js";
import { CHANGE_OF } from "../operations/write-changes.js";
import type { PgQueryable } from "./pg-connection.js";
import { rows } from "./pg-operation.js";

/**
 * The watch channel of the schema the tables are in (`current_schema()`), so two stores in two
 * schemas of one database do not hear each other; hashed, as a channel name is at most 63 bytes.
 */
export const CHANNEL_SQL = "'sessiondb_watch_' || left(md5(current_schema()), 16)";

/** PostgreSQL refuses a payload of 8000 bytes or more; one is kept under this. */
export const MAX_PAYLOAD_BYTES = 7900;

/** A notification's payload: messages appended, sessions touched, or "read everything again". */
export interface ChangePayload {
  /** Message ids, in the order they were appended. */
  m?: number[];
  /** Session ids whose row may have changed (created, updated, deleted). */
  s?: string[];
  /**
   * The changes the transaction's writes made, in the order they were made: `[i, change]` for
   * the session `s[i]`. A watcher that reads several transactions on one snapshot tells their
   * changes in this order (a diff alone would tell them in one fixed order).
   */
  c?: [number, SessionChange][];
  /** What changed is not listed (a prune, an id too long for a payload): compare every session. */
  r?: 1;
}

/** The changes of one transaction, noted write by write and sent before its COMMIT. */
export class PgChangeNotes {
  #messages: number[] = [];
  /** Each session touched, with its place in `s`. */
  #sessions = new Map<string, number>();
  /** The changes the writes made, in order: `[place in s, change]`. */
  #changes: [number, SessionChange][] = [];
  #reread = false;

  #touch(id: string, op: WriteOpName): void {
    let place = this.#sessions.get(id);
    if (place === undefined) this.#sessions.set(id, (place = this.#sessions.size));
    this.#changes.push([place, CHANGE_OF[op]!]);
  }

  /** Notes what a write that succeeded changed (`result`: what it answered). */
  async note(db: PgQueryable, op: WriteOpName, params: unknown, result: unknown): Promise<void> {
    const p = params as { id?: string; sessionId?: string; session?: { id?: unknown }; params?: { id?: string } };
    switch (op) {
      case "appendMessage":
        this.#messages.push(result as number);
        return;
      case "createSession":
      case "ensureSession":
      case "endSession":
      case "reopenSession":
      case "updateSystemPrompt":
      case "setSessionTitle":
      case "deleteSession":
        this.#touch(p.id!, op);
        return;
      case "updateTokenCounts":
        this.#touch(p.params!.id!, op);
        return;
      case "clearMessages":
      case "popMessage":
        this.#touch(p.sessionId!, op);
        return;
      case "importSession": {
        if ((result as ImportResult).status !== "imported") return;
        const id = String(p.session?.id);
        this.#touch(id, op);
        // A new session: every message it has is the import's.
        const imported = await rows<{ id: number }>(db, "SELECT id FROM messages WHERE session_id = $1 ORDER BY id", [id]);
        for (const row of imported) this.#messages.push(row.id);
        return;
      }
      case "pruneSessions":
        if ((result as number) > 0) this.#reread = true;
        return;
      default:
        this.#reread = true; // a write this table does not know yet: compare everything rather than miss it
    }
  }

  get empty(): boolean {
    return this.#messages.length === 0 && this.#sessions.size === 0 && !this.#reread;
  }

  /** The payloads, each under the size limit, in order. */
  payloads(): string[] {
    if (this.#reread) return [JSON.stringify({ r: 1 } satisfies ChangePayload)];
    const whole: ChangePayload = {};
    if (this.#sessions.size > 0) [whole.s, whole.c] = [[...this.#sessions.keys()], this.#changes];
    if (this.#messages.length > 0) whole.m = this.#messages;
    const one = JSON.stringify(whole);
    if (Buffer.byteLength(one) <= MAX_PAYLOAD_BYTES) return [one];
    // Too much for one payload: the sessions, then the messages, in several, without the order of
    // the sessions' changes (a watcher tells them in one fixed order after the messages).
    const out: string[] = [];
    let sessions: string[] = [];
    let size = 0;
    const flushSessions = () => {
      if (sessions.length > 0) out.push(JSON.stringify({ s: sessions } satisfies ChangePayload));
      sessions = [];
      size = 0;
    };
    for (const id of this.#sessions.keys()) {
      const bytes = Buffer.byteLength(JSON.stringify(id)) + 1;
      if (bytes + 16 > MAX_PAYLOAD_BYTES) return [JSON.stringify({ r: 1 } satisfies ChangePayload)];
      if (size + bytes + 16 > MAX_PAYLOAD_BYTES) flushSessions();
      sessions.push(id);
      size += bytes;
    }
    flushSessions();
    // Ids of at most 16 digits and a comma each.
    const perPayload = Math.floor((MAX_PAYLOAD_BYTES - 16) / 17);
    for (let i = 0; i < this.#messages.length; i += perPayload) {
      out.push(JSON.stringify({ m: this.#messages.slice(i, i + perPayload) } satisfies ChangePayload));
    }
    return out;
  }

  /** Sends the notes inside the transaction (one round trip), then forgets them. */
  async send(db: PgQueryable): Promise<void> {
    if (this.empty) return;
    const payloads = this.payloads();
    this.clear();
    await db.query(`SELECT pg_notify(${CHANNEL_SQL}, p) FROM unnest($1::text[]) WITH ORDINALITY AS t(p, n) ORDER BY n`, [payloads]);
  }

  clear(): void {
    this.#messages = [];
    this.#sessions = new Map();
    this.#changes = [];
    this.#reread = false;
  }
}

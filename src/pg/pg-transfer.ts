/** Exports (one session, or all streamed in keyset pages) and `importSession` on PostgreSQL. */
import { SessionDBError } from "../errors.js";
import { fillPage, nextPage, PAGE_SESSIONS, type ExportCursor } from "../operations/export-page.js";
import type { ImportParams } from "../operations/import-params.js";
import { MESSAGE_COLUMNS, SESSION_COLUMNS, SESSION_SELECT } from "../operations/rows.js";
import type { ImportResult, SessionExport, SessionRow } from "../session-db.js";
import type { PgQueryable } from "./pg-connection.js";
import { messagesOf } from "./pg-messages.js";
import { one, rows, type PgRunners } from "./pg-operation.js";
import { sessionRow, titleOwner } from "./pg-sessions.js";
import { inPgReadSnapshot } from "./pg-snapshot.js";

const insertSql = (table: string, columns: readonly string[]) =>
  `INSERT INTO ${table} (${columns.join(", ")}) VALUES (${columns.map((_, i) => `$${i + 1}`).join(", ")})`;
const INSERT_SESSION = insertSql("sessions", SESSION_COLUMNS);
const INSERT_MESSAGE_WITH_ID = insertSql("messages", MESSAGE_COLUMNS);
const COLUMNS_BUT_ID = MESSAGE_COLUMNS.filter((c) => c !== "id");
const INSERT_MESSAGE = insertSql("messages", COLUMNS_BUT_ID);

async function exists(db: PgQueryable, id: unknown): Promise<boolean> {
  return (await one(db, "SELECT 1 FROM sessions WHERE id = $1", [id])) !== undefined;
}

/** The exported ids are kept only when none of them is held by a message already. */
async function canKeepIds(db: PgQueryable, p: ImportParams): Promise<boolean> {
  if (!p.idsUsable || p.messages.length === 0) return p.idsUsable;
  const taken = await one(db, "SELECT 1 FROM messages WHERE id = ANY($1::bigint[]) LIMIT 1", [p.messages.map((m) => m.id)]);
  return taken === undefined;
}

/**
 * Moves the id sequence past the kept ids before they are written: sequences are not
 * transactional, so from this moment no append (on this host or another) can be given one of them.
 */
async function reserveIds(db: PgQueryable, maxId: number): Promise<void> {
  await db.query(
    `SELECT setval(pg_get_serial_sequence('messages', 'id'), $1::bigint)
     WHERE $1::bigint > (SELECT last_value FROM messages_id_seq)`,
    [maxId],
  );
}

async function runImport(db: PgQueryable, p: ImportParams): Promise<ImportResult> {
  const { session } = p;
  const nothing = { messages: 0, renumbered: false, parentDetached: false };
  if (await exists(db, session.id)) return { status: "exists", ...nothing };
  const parentMissing = session.parent_session_id !== null && !(await exists(db, session.parent_session_id));
  if (parentMissing && !p.detachMissingParent) return { status: "parent-missing", ...nothing };
  if (session.title !== null) {
    const owner = await titleOwner(db, String(session.title), null);
    if (owner !== undefined) throw new SessionDBError("TITLE_IN_USE", `Title '${session.title}' is already in use by session ${owner}`);
  }
  const values = { ...session, parent_session_id: parentMissing ? null : session.parent_session_id };
  await db.query(INSERT_SESSION, SESSION_COLUMNS.map((c) => values[c]));
  const keepIds = await canKeepIds(db, p);
  if (keepIds && p.messages.length > 0) await reserveIds(db, p.messages.reduce((max, m) => Math.max(max, Number(m.id)), 0));
  for (const m of p.messages) {
    if (keepIds) await db.query(INSERT_MESSAGE_WITH_ID, MESSAGE_COLUMNS.map((c) => m[c]));
    else await db.query(INSERT_MESSAGE, COLUMNS_BUT_ID.map((c) => m[c]));
  }
  return {
    status: "imported",
    messages: p.messages.length,
    renumbered: !keepIds && p.messages.some((m) => m.id !== null),
    parentDetached: parentMissing,
  };
}

export const transferRunners = {
  // The row's counters and the messages are read on one snapshot, so they agree.
  exportSession: (pool, p) =>
    inPgReadSnapshot(pool, async (db) => {
      const session = await sessionRow(db, p.id);
      return session === null ? null : { ...session, messages: await messagesOf(db, session.id) };
    }),

  /** One page; an export's pages must share one snapshot (`PgSnapshot`: the daemon's and direct mode's streams). */
  exportAll: (pool, p, cursor) => inPgReadSnapshot(pool, async (db) => {
    const after = cursor as ExportCursor | null;
    const sessions = await rows<SessionRow>(
      db,
      `SELECT ${SESSION_SELECT} FROM sessions s
       WHERE ($1::text IS NULL OR s.source = $1)
         AND ($2::float8 IS NULL OR s.started_at < $2 OR (s.started_at = $2 AND s.id COLLATE "C" < $3))
       ORDER BY s.started_at DESC, s.id COLLATE "C" DESC LIMIT ${PAGE_SESSIONS}`,
      [p.source, after?.startedAt ?? null, after?.id ?? null],
    );
    const fill = fillPage(sessions);
    let step = fill.next();
    while (step.done !== true) step = fill.next(await messagesOf(db, step.value));
    return { items: step.value, next: nextPage(step.value, sessions.length) };
  }),

  importSession: runImport,
} satisfies Partial<PgRunners>;

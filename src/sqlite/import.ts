/**
 * Restoring one exported session (a line of `exportAll`) in one write: the `importSession`
 * operation behind `sessiondb import`.
 */
import type { ImportResult } from "../session-db.js";
import { noteCjkBackfill } from "./cjk-index.js";
import { sql, type Connection } from "./connection.js";
import { write } from "./define-operation.js";
import { containsCjk } from "../operations/fts-query.js";
import type { ImportParams } from "../operations/import-params.js";
import { MESSAGE_COLUMNS, SESSION_COLUMNS } from "../operations/rows.js";
import { assertTitleFree } from "./titles.js";

type Value = string | number | null;

const insertSql = (table: string, columns: readonly string[]) =>
  `INSERT INTO ${table} (${columns.join(", ")}) VALUES (${columns.map((c) => `@${c}`).join(", ")})`;
const INSERT_SESSION = insertSql("sessions", SESSION_COLUMNS);
const INSERT_MESSAGE = insertSql("messages", MESSAGE_COLUMNS);

function sessionExists(db: Connection, id: Value): boolean {
  return sql(db, "SELECT 1 FROM sessions WHERE id = ?").get(id) !== undefined;
}

/** The exported ids are kept only when none of them is held by a message already. */
function canKeepIds(db: Connection, p: ImportParams): boolean {
  if (!p.idsUsable) return false;
  const taken = sql(db, "SELECT 1 FROM messages WHERE id = ?");
  return p.messages.every((m) => taken.get(m.id) === undefined);
}

function runImport(db: Connection, p: ImportParams): ImportResult {
  const { session } = p;
  const nothing = { messages: 0, renumbered: false, parentDetached: false };
  if (sessionExists(db, session.id)) return { status: "exists", ...nothing };
  const parentMissing = session.parent_session_id !== null && !sessionExists(db, session.parent_session_id);
  if (parentMissing && !p.detachMissingParent) return { status: "parent-missing", ...nothing };
  if (session.title !== null) assertTitleFree(db, String(session.title), null);
  sql(db, INSERT_SESSION).run(parentMissing ? { ...session, parent_session_id: null } : session);
  const keepIds = canKeepIds(db, p);
  const insert = sql(db, INSERT_MESSAGE);
  for (const m of p.messages) insert.run(keepIds ? m : { ...m, id: null });
  if (keepIds) noteCjkBackfill(db, p.messages.filter((m) => typeof m.content === "string" && containsCjk(m.content)).map((m) => m.id as number));
  return {
    status: "imported",
    messages: p.messages.length,
    renumbered: !keepIds && p.messages.some((m) => m.id !== null),
    parentDetached: parentMissing,
  };
}

export const importSession = write("importSession", runImport);

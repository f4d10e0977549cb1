/** Session titles: uniqueness, lookup, and numbered lineages (SPEC §3, "Titles"). */
import { SessionDBError } from "../errors.js";
import type { SessionRow } from "../session-db.js";
import { escapeLike, sql, type Connection } from "./connection.js";
import { read, write } from "./define-operation.js";
import { lineageBase, nextLineageTitle } from "../operations/lineage-title.js";
import { SESSION_SELECT } from "../operations/rows.js";

/** TITLE_IN_USE when a session (other than `exceptId`, when given) has this title. */
export function assertTitleFree(db: Connection, title: string, exceptId: string | null): void {
  const owner = sql(db, "SELECT id FROM sessions WHERE title = ? AND id IS NOT ?").pluck().get(title, exceptId) as string | undefined;
  if (owner !== undefined) throw new SessionDBError("TITLE_IN_USE", `Title '${title}' is already in use by session ${owner}`);
}

export const setSessionTitle = write("setSessionTitle", (db, p): boolean => {
  if (p.title !== null) assertTitleFree(db, p.title, p.id);
  return sql(db, "UPDATE sessions SET title = ? WHERE id = ?").run(p.title, p.id).changes > 0;
});

export const getSessionTitle = read("getSessionTitle", (db, p) =>
  (sql(db, "SELECT title FROM sessions WHERE id = ?").pluck().get(p.id) as string | null | undefined) ?? null);

function sessionByTitle(db: Connection, title: string): SessionRow | null {
  return (sql(db, `SELECT ${SESSION_SELECT} FROM sessions s WHERE s.title = ?`).get(title) as SessionRow | undefined) ?? null;
}

export const getSessionByTitle = read("getSessionByTitle", (db, p) => sessionByTitle(db, p.title));

export const resolveSessionByTitle = read("resolveSessionByTitle", (db, p): string | null => {
  // A numbered continuation ("<title> #N") wins over the exact title: it is where the work went on.
  const numbered = sql(
    db,
    "SELECT id FROM sessions WHERE title LIKE ? ESCAPE '\\' ORDER BY started_at DESC LIMIT 1",
  ).pluck().get(`${escapeLike(p.title)} #%`) as string | undefined;
  return numbered ?? sessionByTitle(db, p.title)?.id ?? null;
});

export const getNextTitleInLineage = read("getNextTitleInLineage", (db, p): string => {
  const base = lineageBase(p.baseTitle);
  const existing = sql(db, "SELECT title FROM sessions WHERE title = ? OR title LIKE ? ESCAPE '\\'")
    .pluck()
    .all(base, `${escapeLike(base)} #%`) as string[];
  return nextLineageTitle(base, existing);
});

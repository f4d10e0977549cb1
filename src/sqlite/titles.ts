/** Session titles: cleaning, uniqueness, lookup, and numbered lineages (SPEC §3, "Titles"). */
import { SessionDBError } from "../errors.js";
import type { SessionRow } from "../session-db.js";
import { optText, str, type Args } from "../operations/args.js";
import { escapeLike, sql, type Connection } from "./connection.js";
import { read, write } from "./define-operation.js";
import { SESSION_SELECT } from "../operations/rows.js";
import { MAX_TITLE_LENGTH, sanitizeTitle } from "../operations/title-sanitizer.js";

export { MAX_TITLE_LENGTH, sanitizeTitle };

/** TITLE_IN_USE when a session (other than `exceptId`, when given) has this title. */
export function assertTitleFree(db: Connection, title: string, exceptId: string | null): void {
  const owner = sql(db, "SELECT id FROM sessions WHERE title = ? AND id IS NOT ?").pluck().get(title, exceptId) as string | undefined;
  if (owner !== undefined) throw new SessionDBError("TITLE_IN_USE", `Title '${title}' is already in use by session ${owner}`);
}

export const setSessionTitle = write(
  (args) => {
    // Bounded as text, not as a name: only the cleaned length decides (TITLE_TOO_LONG past 100).
    return { id: str(args[0], "id"), title: sanitizeTitle(optText(args[1], "title")) };
  },
  (db, p): boolean => {
    if (p.title !== null) assertTitleFree(db, p.title, p.id);
    return sql(db, "UPDATE sessions SET title = ? WHERE id = ?").run(p.title, p.id).changes > 0;
  },
);

export const getSessionTitle = read(
  (args) => ({ id: str(args[0], "id") }),
  (db, p) => ((sql(db, "SELECT title FROM sessions WHERE id = ?").pluck().get(p.id) as string | null | undefined) ?? null),
);

function sessionByTitle(db: Connection, title: string): SessionRow | null {
  return (sql(db, `SELECT ${SESSION_SELECT} FROM sessions s WHERE s.title = ?`).get(title) as SessionRow | undefined) ?? null;
}

const titleArg = (args: Args) => ({ title: str(args[0], "title") });

export const getSessionByTitle = read(titleArg, (db, p) => sessionByTitle(db, p.title));

export const resolveSessionByTitle = read(titleArg, (db, p): string | null => {
  // A numbered continuation ("<title> #N") wins over the exact title: it is where the work went on.
  const numbered = sql(
    db,
    "SELECT id FROM sessions WHERE title LIKE ? ESCAPE '\\' ORDER BY started_at DESC LIMIT 1",
  ).pluck().get(`${escapeLike(p.title)} #%`) as string | undefined;
  return numbered ?? sessionByTitle(db, p.title)?.id ?? null;
});

const NUMBERED = /^(.*?) #(\d+)$/su;

export const getNextTitleInLineage = read(
  (args) => ({ baseTitle: str(args[0], "baseTitle") }),
  (db, p): string => {
    const base = NUMBERED.exec(p.baseTitle)?.[1] ?? p.baseTitle;
    const existing = sql(db, "SELECT title FROM sessions WHERE title = ? OR title LIKE ? ESCAPE '\\'")
      .pluck()
      .all(base, `${escapeLike(base)} #%`) as string[];
    if (existing.length === 0) return base;
    let max = 1n; // the un-numbered base counts as #1
    for (const title of existing) {
      const n = /^.* #(\d+)$/su.exec(title)?.[1];
      if (n !== undefined && BigInt(n) > max) max = BigInt(n);
    }
    return `${base} #${max + 1n}`;
  },
);

/** Sessions and titles on PostgreSQL: SPEC §3 from createSession to pruneSessions, but messages. */
import { invalidArgument, SessionDBError } from "../errors.js";
import { now } from "../operations/clock.js";
import { escapeLike } from "../operations/like-pattern.js";
import { lineageBase, nextLineageTitle } from "../operations/lineage-title.js";
import { SESSION_SELECT } from "../operations/rows.js";
import { counterOverflow, TEXT_FIELDS, TOKEN_FIELDS } from "../operations/token-counts.js";
import type { SessionRow } from "../session-db.js";
import type { PgQueryable } from "./pg-connection.js";
import { changes, likeAsciiCase, one, rows, type PgRunners } from "./pg-operation.js";

export async function sessionRow(db: PgQueryable, id: string): Promise<SessionRow | null> {
  return (await one<SessionRow>(db, `SELECT ${SESSION_SELECT} FROM sessions s WHERE s.id = $1`, [id])) ?? null;
}

async function exists(db: PgQueryable, id: string): Promise<boolean> {
  return (await one(db, "SELECT 1 FROM sessions WHERE id = $1", [id])) !== undefined;
}

const TOKEN_COLUMNS = TOKEN_FIELDS.map(([, col]) => col);
const TEXT_COLUMNS = TEXT_FIELDS.map(([, col]) => col);
const NEWEST_WINS = new Set<string>(["cost_status", "cost_source", "pricing_version"]);

/** The per-column rules of SPEC §3 (as on SQLite), with positional parameters. */
function tokenUpdateSql(absolute: boolean): string {
  let n = 1;
  const tokens = TOKEN_COLUMNS.map((col) => `${col} = ${absolute ? "" : `${col} + `}$${++n}::bigint`);
  const estimated = `$${++n}::float8`;
  const actual = `$${++n}::float8`;
  const texts = TEXT_COLUMNS.map((col) => {
    const p = `$${++n}::text`;
    return NEWEST_WINS.has(col) ? `${col} = COALESCE(${p}, ${col})` : `${col} = COALESCE(${col}, ${p})`;
  });
  return `UPDATE sessions SET ${tokens.join(", ")},
    estimated_cost_usd = ${absolute ? `COALESCE(${estimated}, 0)` : `COALESCE(estimated_cost_usd, 0) + COALESCE(${estimated}, 0)`},
    actual_cost_usd = CASE WHEN ${actual} IS NULL THEN actual_cost_usd ELSE ${absolute ? actual : `COALESCE(actual_cost_usd, 0) + ${actual}`} END,
    ${texts.join(",\n    ")}
    WHERE id = $1`;
}

const TOKEN_UPDATE_SQL = { increment: tokenUpdateSql(false), absolute: tokenUpdateSql(true) };

/**
 * Per counter, whether adding its parameter would leave bigint's range: refused before the UPDATE
 * (in numeric, which cannot overflow), with the same error as on SQLite rather than 22003.
 */
const TOKEN_OVERFLOW_SQL = `SELECT ${TOKEN_COLUMNS.map((col, i) => {
  const sum = `${col}::numeric + $${i + 2}::numeric`;
  return `(${sum} > 9223372036854775807 OR ${sum} < -9223372036854775808) AS ${col}`;
}).join(", ")} FROM sessions WHERE id = $1`;

/** Detaches children of the listed sessions, then deletes their messages and rows (no cascade). */
async function deleteSessions(db: PgQueryable, ids: string[]): Promise<number> {
  await db.query("UPDATE sessions SET parent_session_id = NULL WHERE parent_session_id = ANY($1)", [ids]);
  await db.query("DELETE FROM messages WHERE session_id = ANY($1)", [ids]);
  return changes(db, "DELETE FROM sessions WHERE id = ANY($1)", [ids]);
}

async function sessionByTitle(db: PgQueryable, title: string): Promise<SessionRow | null> {
  return (await one<SessionRow>(db, `SELECT ${SESSION_SELECT} FROM sessions s WHERE s.title = $1`, [title])) ?? null;
}

function titleInUse(title: string, owner: string): SessionDBError {
  return new SessionDBError("TITLE_IN_USE", `Title '${title}' is already in use by session ${owner}`);
}

/** The session other than `id` that has this exact title, if any. */
export async function titleOwner(db: PgQueryable, title: string, id: string | null): Promise<string | undefined> {
  const row = await one<{ id: string }>(db, "SELECT id FROM sessions WHERE title = $1 AND id IS DISTINCT FROM $2", [title, id]);
  return row?.id;
}

/**
 * Sets a title. Another host's daemon may take the same title between our check and our update:
 * then the unique index refuses it, and the error names that session as the check would have.
 */
async function setTitle(db: PgQueryable, id: string, title: string | null): Promise<boolean> {
  if (title !== null) {
    const owner = await titleOwner(db, title, id);
    if (owner !== undefined) throw titleInUse(title, owner);
  }
  await db.query("SAVEPOINT sessiondb_title");
  try {
    const changed = await changes(db, "UPDATE sessions SET title = $1 WHERE id = $2", [title, id]);
    await db.query("RELEASE SAVEPOINT sessiondb_title");
    return changed > 0;
  } catch (err) {
    await db.query("ROLLBACK TO SAVEPOINT sessiondb_title");
    const owner = title === null || (err as { code?: unknown }).code !== "23505" ? undefined : await titleOwner(db, title, id);
    throw owner === undefined ? err : titleInUse(title!, owner);
  }
}

export const sessionRunners = {
  async createSession(db, p) {
    await db.query(
      `INSERT INTO sessions (id, source, user_id, model, model_config, system_prompt, parent_session_id, started_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (id) DO NOTHING`,
      [p.id, p.source, p.userId, p.model, p.modelConfig, p.systemPrompt, p.parentSessionId, now()],
    );
    return p.id;
  },

  async ensureSession(db, p) {
    await db.query("INSERT INTO sessions (id, source, model, started_at) VALUES ($1, $2, $3, $4) ON CONFLICT (id) DO NOTHING", [
      p.id, p.source, p.model, now(),
    ]);
  },

  async endSession(db, p) {
    await db.query("UPDATE sessions SET ended_at = $1, end_reason = $2 WHERE id = $3 AND ended_at IS NULL", [now(), p.endReason, p.id]);
  },

  async reopenSession(db, p) {
    await db.query("UPDATE sessions SET ended_at = NULL, end_reason = NULL WHERE id = $1", [p.id]);
  },

  async updateSystemPrompt(db, p) {
    await db.query("UPDATE sessions SET system_prompt = $1 WHERE id = $2", [p.systemPrompt, p.id]);
  },

  async updateTokenCounts(db, p) {
    // A count bound as the reference's sqlite3 binds it (a REAL, TEXT or BLOB kept in an INTEGER
    // column) has no equivalent in a BIGINT column: refused rather than rounded.
    const bound = TOKEN_FIELDS.find(([, col]) => p.params[`${col}_bound`] !== null);
    if (bound !== undefined) {
      throw invalidArgument(
        `usage.${bound[0]}Bound: PostgreSQL stores token counts as BIGINT; ${String(p.params[`${bound[1]}_bound`])} is not a whole number of tokens`,
      );
    }
    const values = [
      p.params.id,
      ...TOKEN_COLUMNS.map((col) => p.params[col]),
      p.params.estimated,
      p.params.actual,
      ...TEXT_COLUMNS.map((col) => p.params[col]),
    ];
    if (!p.absolute) {
      const overflow = await one<Record<string, boolean | null>>(db, TOKEN_OVERFLOW_SQL, values.slice(0, TOKEN_COLUMNS.length + 1));
      const past = TOKEN_FIELDS.find(([, col]) => overflow?.[col] === true);
      if (past !== undefined) throw counterOverflow(past[0], p.params[past[1]]);
    }
    await db.query(p.absolute ? TOKEN_UPDATE_SQL.absolute : TOKEN_UPDATE_SQL.increment, values);
  },

  getSession: (db, p) => sessionRow(db, p.id),

  async resolveSessionId(db, p) {
    if (await exists(db, p.idOrPrefix)) return p.idOrPrefix;
    const matches = await rows<{ id: string }>(
      db,
      `SELECT id FROM sessions WHERE ${likeAsciiCase("id", "$1")} ORDER BY started_at DESC LIMIT 2`,
      [`${escapeLike(p.idOrPrefix)}%`],
    );
    return matches.length === 1 ? matches[0]!.id : null;
  },

  async sessionIdsByPrefix(db, p) {
    const matches = await rows<{ id: string }>(
      db,
      `SELECT id FROM sessions WHERE ${likeAsciiCase("id", "$1")} ORDER BY started_at DESC, id COLLATE "C" DESC LIMIT $2`,
      [`${escapeLike(p.prefix)}%`, p.limit],
    );
    return matches.map((m) => m.id);
  },

  searchSessions: (db, p) =>
    rows<SessionRow>(
      db,
      `SELECT ${SESSION_SELECT} FROM sessions s WHERE ($1::text IS NULL OR s.source = $1)
       ORDER BY s.started_at DESC LIMIT $2 OFFSET $3`,
      [p.source, p.limit, p.offset],
    ),

  async sessionCount(db, p) {
    const row = await one<{ n: number }>(db, "SELECT COUNT(*) AS n FROM sessions WHERE ($1::text IS NULL OR source = $1)", [p.source]);
    return row?.n ?? 0;
  },

  async deleteSession(db, p) {
    if (!(await exists(db, p.id))) return false;
    await deleteSessions(db, [p.id]);
    return true;
  },

  async pruneSessions(db, p) {
    const cutoff = now() - p.olderThanDays * 86400;
    const ids = await rows<{ id: string }>(
      db,
      "SELECT id FROM sessions WHERE ended_at IS NOT NULL AND started_at < $1 AND ($2::text IS NULL OR source = $2)",
      [cutoff, p.source],
    );
    return ids.length === 0 ? 0 : deleteSessions(db, ids.map((r) => r.id));
  },

  setSessionTitle: (db, p) => setTitle(db, p.id, p.title),

  async getSessionTitle(db, p) {
    return (await one<{ title: string | null }>(db, "SELECT title FROM sessions WHERE id = $1", [p.id]))?.title ?? null;
  },

  getSessionByTitle: (db, p) => sessionByTitle(db, p.title),

  async resolveSessionByTitle(db, p) {
    // A numbered continuation ("<title> #N") wins over the exact title: it is where the work went on.
    const numbered = await one<{ id: string }>(
      db,
      `SELECT id FROM sessions WHERE ${likeAsciiCase("title", "$1")} ORDER BY started_at DESC LIMIT 1`,
      [`${escapeLike(p.title)} #%`],
    );
    return numbered?.id ?? (await sessionByTitle(db, p.title))?.id ?? null;
  },

  async getNextTitleInLineage(db, p) {
    const base = lineageBase(p.baseTitle);
    const existing = await rows<{ title: string }>(db, `SELECT title FROM sessions WHERE title = $1 OR ${likeAsciiCase("title", "$2")}`, [
      base, `${escapeLike(base)} #%`,
    ]);
    return nextLineageTitle(base, existing.map((row) => row.title));
  },
} satisfies Partial<PgRunners>;

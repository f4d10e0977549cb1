/** Session lifecycle, token accounting, id resolution, counting, delete and prune (SPEC §3). */
import type { SessionRow } from "../session-db.js";
import { escapeLike, now, sql, type Connection } from "./connection.js";
import { read, write } from "./define-operation.js";
import { SESSION_SELECT } from "../operations/rows.js";
import { counterOverflow, TOKEN_FIELDS } from "../operations/token-counts.js";

export function getSessionRow(db: Connection, id: string): SessionRow | null {
  return (sql(db, `SELECT ${SESSION_SELECT} FROM sessions s WHERE s.id = ?`).get(id) as SessionRow | undefined) ?? null;
}

export const createSession = write("createSession", (db, p) => {
  sql(
    db,
    `INSERT OR IGNORE INTO sessions (id, source, user_id, model, model_config, system_prompt,
       parent_session_id, started_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
  ).run(p.id, p.source, p.userId, p.model, p.modelConfig, p.systemPrompt, p.parentSessionId, now());
  return p.id;
});

export const ensureSession = write("ensureSession", (db, p): void => {
  sql(db, "INSERT OR IGNORE INTO sessions (id, source, model, started_at) VALUES (?, ?, ?, ?)").run(
    p.id, p.source, p.model, now(),
  );
});

export const endSession = write("endSession", (db, p): void => {
  sql(db, "UPDATE sessions SET ended_at = ?, end_reason = ? WHERE id = ? AND ended_at IS NULL").run(
    now(), p.endReason, p.id,
  );
});

export const reopenSession = write("reopenSession", (db, p): void => {
  sql(db, "UPDATE sessions SET ended_at = NULL, end_reason = NULL WHERE id = ?").run(p.id);
});

export const updateSystemPrompt = write("updateSystemPrompt", (db, p): void => {
  sql(db, "UPDATE sessions SET system_prompt = ? WHERE id = ?").run(p.systemPrompt, p.id);
});

/** Per-column rules of SPEC §3: token counters add (or are set), costs accumulate, billing sticks. */
function tokenUpdateSql(absolute: boolean): string {
  // better-sqlite3 binds a number as a REAL: cast, or the sum is a double and a counter past 2^53 loses its low digits.
  // A `<key>Bound` value (boundCount) is the reference's own bind: `col + ?` and `col = ?` as is.
  const tokens = TOKEN_FIELDS.map(([, col]) =>
    absolute
      ? `${col} = CASE WHEN @${col}_bound IS NULL THEN @${col} ELSE @${col}_bound END`
      : `${col} = ${col} + CASE WHEN @${col}_bound IS NULL THEN CAST(@${col} AS INTEGER) ELSE @${col}_bound END`,
  );
  const estimated = absolute ? "COALESCE(@estimated, 0)" : "COALESCE(estimated_cost_usd, 0) + COALESCE(@estimated, 0)";
  const actual = absolute ? "@actual" : "COALESCE(actual_cost_usd, 0) + @actual";
  return `UPDATE sessions SET ${tokens.join(", ")},
    estimated_cost_usd = ${estimated},
    actual_cost_usd = CASE WHEN @actual IS NULL THEN actual_cost_usd ELSE ${actual} END,
    cost_status = COALESCE(@cost_status, cost_status),
    cost_source = COALESCE(@cost_source, cost_source),
    pricing_version = COALESCE(@pricing_version, pricing_version),
    billing_provider = COALESCE(billing_provider, @billing_provider),
    billing_base_url = COALESCE(billing_base_url, @billing_base_url),
    billing_mode = COALESCE(billing_mode, @billing_mode),
    model = COALESCE(model, @model)
    WHERE id = @id`;
}

const TOKEN_UPDATE_SQL = { increment: tokenUpdateSql(false), absolute: tokenUpdateSql(true) };

/**
 * Per counter, 1 when adding its parameter would leave SQLite's 64-bit integers, where SQLite
 * would silently store a REAL (9.2e18) instead: such an addition is refused, nothing applied.
 */
const TOKEN_OVERFLOW_SQL = `SELECT ${TOKEN_FIELDS.map(([, col]) => {
  const p = `CAST(@${col} AS INTEGER)`;
  return `CASE WHEN ${p} >= 0 THEN ${col} > 9223372036854775807 - ${p} ELSE ${col} < -9223372036854775808 - ${p} END AS ${col}`;
}).join(", ")} FROM sessions WHERE id = @id`;

export const updateTokenCounts = write("updateTokenCounts", (db, p): void => {
  if (!p.absolute) {
    const overflow = sql(db, TOKEN_OVERFLOW_SQL).get(p.params) as Record<string, number | null> | undefined;
    const past = TOKEN_FIELDS.find(([, col]) => overflow?.[col] === 1);
    if (past !== undefined) throw counterOverflow(past[0], p.params[past[1]]);
  }
  sql(db, p.absolute ? TOKEN_UPDATE_SQL.absolute : TOKEN_UPDATE_SQL.increment).run(p.params);
});

export const getSession = read("getSession", (db, p) => getSessionRow(db, p.id));

export const resolveSessionId = read("resolveSessionId", (db, p): string | null => {
  if (sql(db, "SELECT 1 FROM sessions WHERE id = ?").get(p.idOrPrefix) !== undefined) return p.idOrPrefix;
  const matches = sql(
    db,
    "SELECT id FROM sessions WHERE id LIKE ? ESCAPE '\\' ORDER BY started_at DESC LIMIT 2",
  ).pluck().all(`${escapeLike(p.idOrPrefix)}%`) as string[];
  return matches.length === 1 ? matches[0]! : null;
});

export const sessionIdsByPrefix = read("sessionIdsByPrefix", (db, p): string[] =>
  sql(db, "SELECT id FROM sessions WHERE id LIKE ? ESCAPE '\\' ORDER BY started_at DESC, id DESC LIMIT ?")
    .pluck()
    .all(`${escapeLike(p.prefix)}%`, p.limit) as string[]);

export const searchSessions = read("searchSessions", (db, p) =>
  sql(
    db,
    `SELECT ${SESSION_SELECT} FROM sessions s WHERE (@source IS NULL OR s.source = @source)
     ORDER BY s.started_at DESC LIMIT @limit OFFSET @offset`,
  ).all(p) as SessionRow[]);

export const sessionCount = read("sessionCount", (db, p) =>
  (p.source === null
    ? sql(db, "SELECT COUNT(*) FROM sessions").pluck().get()
    : sql(db, "SELECT COUNT(*) FROM sessions WHERE source = ?").pluck().get(p.source)) as number);

/** Detaches children of the listed sessions, then deletes their messages and rows (no cascade). */
function deleteSessions(db: Connection, ids: string[]): number {
  const list = JSON.stringify(ids);
  sql(db, "UPDATE sessions SET parent_session_id = NULL WHERE parent_session_id IN (SELECT value FROM json_each(?))").run(list);
  sql(db, "DELETE FROM messages WHERE session_id IN (SELECT value FROM json_each(?))").run(list);
  return sql(db, "DELETE FROM sessions WHERE id IN (SELECT value FROM json_each(?))").run(list).changes;
}

export const deleteSession = write("deleteSession", (db, p): boolean => {
  if (sql(db, "SELECT 1 FROM sessions WHERE id = ?").get(p.id) === undefined) return false;
  deleteSessions(db, [p.id]);
  return true;
});

export const pruneSessions = write("pruneSessions", (db, p): number => {
  const cutoff = now() - p.olderThanDays * 86400;
  const ids = sql(
    db,
    `SELECT id FROM sessions WHERE ended_at IS NOT NULL AND started_at < @cutoff AND (@source IS NULL OR source = @source)`,
  ).pluck().all({ cutoff, source: p.source }) as string[];
  return ids.length === 0 ? 0 : deleteSessions(db, ids);
});

/** Session lifecycle, token accounting, id resolution, counting, delete and prune (SPEC §3). */
import { invalidArgument, type SessionDBError } from "../errors.js";
import type { SessionRow } from "../session-db.js";
import {
  checkTotalText, count, field, jsonColumn, nonEmpty, optBool, optBoundCount, optCount, optNumber, optObject, optStr,
  optText, str,
} from "../operations/args.js";
import { escapeLike, now, sql, type Connection } from "./connection.js";
import { read, write } from "./define-operation.js";
import { SESSION_SELECT } from "../operations/rows.js";

export function getSessionRow(db: Connection, id: string): SessionRow | null {
  return (sql(db, `SELECT ${SESSION_SELECT} FROM sessions s WHERE s.id = ?`).get(id) as SessionRow | undefined) ?? null;
}

export const createSession = write(
  (args, op) => {
    const opts = optObject(args[2], "opts");
    const source = args[1];
    if (source === undefined || source === null || source === "") {
      throw invalidArgument("source is required and must be a non-empty string");
    }
    const params = {
      id: nonEmpty(args[0], "id"),
      source: str(source, "source"),
      model: optStr(field(opts, "model"), "opts.model"),
      modelConfig: jsonColumn(opts, "modelConfig", "opts").text,
      systemPrompt: optText(field(opts, "systemPrompt"), "opts.systemPrompt"),
      userId: optStr(field(opts, "userId"), "opts.userId"),
      parentSessionId: optStr(field(opts, "parentSessionId"), "opts.parentSessionId"),
    };
    checkTotalText(op, [params.modelConfig, params.systemPrompt]);
    return params;
  },
  (db, p) => {
    sql(
      db,
      `INSERT OR IGNORE INTO sessions (id, source, user_id, model, model_config, system_prompt,
         parent_session_id, started_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    ).run(p.id, p.source, p.userId, p.model, p.modelConfig, p.systemPrompt, p.parentSessionId, now());
    return p.id;
  },
);

export const ensureSession = write(
  (args) => ({
    id: nonEmpty(args[0], "id"),
    source: optStr(args[1], "source") || "unknown",
    model: optStr(args[2], "model"),
  }),
  (db, p): void => {
    sql(db, "INSERT OR IGNORE INTO sessions (id, source, model, started_at) VALUES (?, ?, ?, ?)").run(
      p.id, p.source, p.model, now(),
    );
  },
);

export const endSession = write(
  (args) => ({ id: str(args[0], "id"), endReason: str(args[1], "endReason") }),
  (db, p): void => {
    sql(db, "UPDATE sessions SET ended_at = ?, end_reason = ? WHERE id = ? AND ended_at IS NULL").run(
      now(), p.endReason, p.id,
    );
  },
);

export const reopenSession = write(
  (args) => ({ id: str(args[0], "id") }),
  (db, p): void => {
    sql(db, "UPDATE sessions SET ended_at = NULL, end_reason = NULL WHERE id = ?").run(p.id);
  },
);

export const updateSystemPrompt = write(
  (args) => ({ id: str(args[0], "id"), systemPrompt: optText(args[1], "systemPrompt") }),
  (db, p): void => {
    sql(db, "UPDATE sessions SET system_prompt = ? WHERE id = ?").run(p.systemPrompt, p.id);
  },
);

export const TOKEN_FIELDS = [
  ["inputTokens", "input_tokens"],
  ["outputTokens", "output_tokens"],
  ["cacheReadTokens", "cache_read_tokens"],
  ["cacheWriteTokens", "cache_write_tokens"],
  ["reasoningTokens", "reasoning_tokens"],
] as const;

const TEXT_FIELDS = [
  ["costStatus", "cost_status"],
  ["costSource", "cost_source"],
  ["pricingVersion", "pricing_version"],
  ["billingProvider", "billing_provider"],
  ["billingBaseUrl", "billing_base_url"],
  ["billingMode", "billing_mode"],
  ["model", "model"],
] as const;

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

/** The refusal of a counter addition that would pass ±2^63 (the same words on PostgreSQL). */
export function counterOverflow(key: string, value: unknown): SessionDBError {
  return invalidArgument(
    `usage.${key}: adding ${String(value)} would take the counter past the 64-bit integer range (2^63 - 1); nothing was applied`,
  );
}

export const updateTokenCounts = write(
  (args) => {
    const usage = optObject(args[1], "usage");
    const opts = optObject(args[2], "opts");
    const params: Record<string, string | number | Uint8Array | null> = { id: str(args[0], "id") };
    for (const [key, col] of TOKEN_FIELDS) {
      const bound = optBoundCount(field(usage, `${key}Bound`), `usage.${key}Bound`);
      const value = bound === null ? optCount(field(usage, key), `usage.${key}`) : 0;
      params[col] = value === undefined ? 0 : value; // left out counts as 0; an explicit null writes NULL
      params[`${col}_bound`] = bound;
    }
    params.estimated = optNumber(field(usage, "estimatedCostUsd"), "usage.estimatedCostUsd") ?? null;
    params.actual = optNumber(field(usage, "actualCostUsd"), "usage.actualCostUsd") ?? null;
    for (const [key, col] of TEXT_FIELDS) params[col] = optStr(field(usage, key), `usage.${key}`);
    return { absolute: optBool(field(opts, "absolute"), "opts.absolute", false), params };
  },
  (db, p): void => {
    if (!p.absolute) {
      const overflow = sql(db, TOKEN_OVERFLOW_SQL).get(p.params) as Record<string, number | null> | undefined;
      const past = TOKEN_FIELDS.find(([, col]) => overflow?.[col] === 1);
      if (past !== undefined) throw counterOverflow(past[0], p.params[past[1]]);
    }
    sql(db, p.absolute ? TOKEN_UPDATE_SQL.absolute : TOKEN_UPDATE_SQL.increment).run(p.params);
  },
);

export const getSession = read(
  (args) => ({ id: str(args[0], "id") }),
  (db, p) => getSessionRow(db, p.id),
);

export const resolveSessionId = read(
  (args) => ({ idOrPrefix: str(args[0], "idOrPrefix") }),
  (db, p): string | null => {
    if (sql(db, "SELECT 1 FROM sessions WHERE id = ?").get(p.idOrPrefix) !== undefined) return p.idOrPrefix;
    const matches = sql(
      db,
      "SELECT id FROM sessions WHERE id LIKE ? ESCAPE '\\' ORDER BY started_at DESC LIMIT 2",
    ).pluck().all(`${escapeLike(p.idOrPrefix)}%`) as string[];
    return matches.length === 1 ? matches[0]! : null;
  },
);

/** Most ids `sessionIdsByPrefix` returns. */
const MAX_PREFIX_MATCHES = 1000;

export const sessionIdsByPrefix = read(
  (args) => {
    const opts = optObject(args[1], "opts");
    return { prefix: str(args[0], "prefix"), limit: count(field(opts, "limit"), "opts.limit", 20, MAX_PREFIX_MATCHES) };
  },
  (db, p): string[] =>
    sql(db, "SELECT id FROM sessions WHERE id LIKE ? ESCAPE '\\' ORDER BY started_at DESC, id DESC LIMIT ?")
      .pluck()
      .all(`${escapeLike(p.prefix)}%`, p.limit) as string[],
);

export const searchSessions = read(
  (args) => {
    const opts = optObject(args[0], "opts");
    return {
      source: optStr(field(opts, "source"), "opts.source"),
      limit: count(field(opts, "limit"), "opts.limit", 20),
      offset: count(field(opts, "offset"), "opts.offset", 0, Number.MAX_SAFE_INTEGER),
    };
  },
  (db, p) =>
    sql(
      db,
      `SELECT ${SESSION_SELECT} FROM sessions s WHERE (@source IS NULL OR s.source = @source)
       ORDER BY s.started_at DESC LIMIT @limit OFFSET @offset`,
    ).all(p) as SessionRow[],
);

export const sessionCount = read(
  (args) => ({ source: optStr(field(optObject(args[0], "opts"), "source"), "opts.source") }),
  (db, p) =>
    (p.source === null
      ? sql(db, "SELECT COUNT(*) FROM sessions").pluck().get()
      : sql(db, "SELECT COUNT(*) FROM sessions WHERE source = ?").pluck().get(p.source)) as number,
);

/** Detaches children of the listed sessions, then deletes their messages and rows (no cascade). */
function deleteSessions(db: Connection, ids: string[]): number {
  const list = JSON.stringify(ids);
  sql(db, "UPDATE sessions SET parent_session_id = NULL WHERE parent_session_id IN (SELECT value FROM json_each(?))").run(list);
  sql(db, "DELETE FROM messages WHERE session_id IN (SELECT value FROM json_each(?))").run(list);
  return sql(db, "DELETE FROM sessions WHERE id IN (SELECT value FROM json_each(?))").run(list).changes;
}

export const deleteSession = write(
  (args) => ({ id: str(args[0], "id") }),
  (db, p): boolean => {
    if (sql(db, "SELECT 1 FROM sessions WHERE id = ?").get(p.id) === undefined) return false;
    deleteSessions(db, [p.id]);
    return true;
  },
);

export const pruneSessions = write(
  (args) => {
    const opts = optObject(args[0], "opts");
    const days = optNumber(field(opts, "olderThanDays"), "opts.olderThanDays") ?? 90;
    if (days < 0) throw invalidArgument(`opts.olderThanDays must not be negative, got ${days}`);
    return { olderThanDays: days, source: optStr(field(opts, "source"), "opts.source") };
  },
  (db, p): number => {
    const cutoff = now() - p.olderThanDays * 86400;
    const ids = sql(
      db,
      `SELECT id FROM sessions WHERE ended_at IS NOT NULL AND started_at < @cutoff AND (@source IS NULL OR source = @source)`,
    ).pluck().all({ cutoff, source: p.source }) as string[];
    return ids.length === 0 ? 0 : deleteSessions(db, ids);
  },
);

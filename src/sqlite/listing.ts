/** The rich session listing and compression chains (SPEC §3, "Compression chains", "listSessionsRich"). */
import type { RichSessionRow } from "../session-db.js";
import { count, field, optBool, optObject, optStr, optStrList, str } from "../operations/args.js";
import { sql, type Connection } from "./connection.js";
import { read } from "./define-operation.js";
import { SESSION_SELECT } from "../operations/rows.js";

const MAX_CHAIN_HOPS = 100;

/**
 * Follows a conversation split by context compression to its live end: while the session ended
 * with 'compression', move to its newest child started after it ended (children started before
 * the end are delegated sub-agents, never the tip).
 */
export function compressionTip(db: Connection, id: string): string {
  let current = id;
  for (let hop = 0; hop < MAX_CHAIN_HOPS; hop++) {
    const row = sql(db, "SELECT end_reason, ended_at FROM sessions WHERE id = ?").get(current) as
      | { end_reason: string | null; ended_at: number | null }
      | undefined;
    if (row === undefined || row.end_reason !== "compression" || row.ended_at === null) break;
    const child = sql(
      db,
      "SELECT id FROM sessions WHERE parent_session_id = ? AND started_at >= ? ORDER BY started_at DESC LIMIT 1",
    ).pluck().get(current, row.ended_at) as string | undefined;
    if (child === undefined) break;
    current = child;
  }
  return current;
}

export const getCompressionTip = read(
  (args) => ({ id: str(args[0], "id") }),
  (db, p) => compressionTip(db, p.id),
);

/** Session columns plus the preview's raw text and last activity, all in one statement. */
const RICH_SELECT = `SELECT ${SESSION_SELECT},
  COALESCE((SELECT MAX(m.timestamp) FROM messages m WHERE m.session_id = s.id), s.started_at) AS last_active,
  COALESCE((SELECT substr(replace(replace(m.content, X'0A', ' '), X'0D', ' '), 1, 63) FROM messages m
            WHERE m.session_id = s.id AND m.role = 'user' AND m.content IS NOT NULL
            ORDER BY m.timestamp, m.id LIMIT 1), '') AS preview
  FROM sessions s`;

const LIST_SQL = `${RICH_SELECT}
  WHERE (@children = 1 OR s.parent_session_id IS NULL)
    AND (@source IS NULL OR s.source = @source)
    AND (@excluded IS NULL OR s.source NOT IN (SELECT value FROM json_each(@excluded)))
  ORDER BY s.started_at DESC LIMIT @limit OFFSET @offset`;

const ONE_SQL = `${RICH_SELECT} WHERE s.id = ?`;

/** The trimmed first 60 characters of the first user message, with "..." when cut. */
export function preview(raw: string): string {
  const text = [...raw.trim()];
  return text.length > 60 ? `${text.slice(0, 60).join("")}...` : text.join("");
}

function finish(row: RichSessionRow): RichSessionRow {
  row.preview = preview(row.preview);
  return row;
}

/** The fields a compressed root shows from its tip; the rest (started_at, so the order) stay the root's. */
export const PROJECTED = [
  "id", "ended_at", "end_reason", "message_count", "tool_call_count", "title", "last_active", "preview",
  "model", "system_prompt",
] as const;

function project(db: Connection, root: RichSessionRow): RichSessionRow {
  if (root.end_reason !== "compression") return root;
  const tipId = compressionTip(db, root.id);
  if (tipId === root.id) return root;
  const tip = sql(db, ONE_SQL).get(tipId) as RichSessionRow | undefined;
  if (tip === undefined) return root;
  const projected: Record<string, unknown> = { ...root };
  for (const key of PROJECTED) projected[key] = key === "preview" ? preview(tip.preview) : tip[key];
  projected._lineage_root_id = root.id;
  return projected as unknown as RichSessionRow;
}

export const listSessionsRich = read(
  (args) => {
    const opts = optObject(args[0], "opts");
    const excluded = optStrList(field(opts, "excludeSources"), "opts.excludeSources");
    const includeChildren = optBool(field(opts, "includeChildren"), "opts.includeChildren", false);
    return {
      source: optStr(field(opts, "source"), "opts.source"),
      excluded: excluded !== null && excluded.length > 0 ? JSON.stringify(excluded) : null,
      limit: count(field(opts, "limit"), "opts.limit", 20),
      offset: count(field(opts, "offset"), "opts.offset", 0, Number.MAX_SAFE_INTEGER),
      children: includeChildren ? 1 : 0,
      project: !includeChildren && optBool(field(opts, "projectCompressionTips"), "opts.projectCompressionTips", true),
    };
  },
  (db, p) => {
    const { project: projectTips, ...params } = p;
    const rows = (sql(db, LIST_SQL).all(params) as RichSessionRow[]).map(finish);
    return projectTips ? rows.map((row) => project(db, row)) : rows;
  },
);

/**
 * Full-text search on PostgreSQL (SPEC §3.1): the FTS5 query, sanitized as on SQLite, becomes a
 * `tsquery` over the GIN index on `sessiondb_fts_vector(content)`; snippets come from
 * `ts_headline` with the same `>>>`/`<<<` markers; the CJK fallback is a LIKE that ignores ASCII
 * case, as SQLite's, found through an `ILIKE` the `pg_trgm` index serves. Context (the messages before and after in the same session) comes in the same
 * statement.
 */
import { escapeLike } from "../operations/like-pattern.js";
import { containsCjk, sanitizeFtsQuery } from "../operations/fts-query.js";
import type { SearchParams } from "../operations/search-params.js";
import type { SearchHit } from "../session-db.js";
import type { PgQueryable } from "./pg-connection.js";
import { ftsToTsquery } from "./fts-to-tsquery.js";
import { likeAsciiCase, list, rows, type PgRunners } from "./pg-operation.js";

/** FTS5's snippet(…, 40) shows about 40 tokens around the match. */
const HEADLINE_OPTIONS = "StartSel=>>>, StopSel=<<<, MaxWords=40, MinWords=20, ShortWord=0, MaxFragments=1, FragmentDelimiter=...";

const FILTERS = `
  AND ($2::text[] IS NULL OR s.source = ANY($2))
  AND ($3::text[] IS NULL OR NOT (s.source = ANY($3)))
  AND ($4::text[] IS NULL OR m.role = ANY($4))`;

const HIT_COLUMNS = `m.id, m.session_id, m.role, {snippet} AS snippet, m.timestamp, m.tool_name, s.source, s.model,
  s.started_at AS session_started`;

const FTS_SQL = `SELECT ${HIT_COLUMNS.replace("{snippet}", `ts_headline('simple', COALESCE(m.content, ''), q.q, '${HEADLINE_OPTIONS}')`)}
  FROM (SELECT to_tsquery('simple', $1) AS q) q, messages m JOIN sessions s ON s.id = m.session_id
  WHERE sessiondb_fts_vector(m.content) @@ q.q ${FILTERS}
  ORDER BY ts_rank(sessiondb_fts_vector(m.content), q.q) DESC, m.timestamp DESC, m.id DESC LIMIT $5 OFFSET $6`;

const LIKE_SQL = `SELECT ${HIT_COLUMNS.replace("{snippet}", "substr(m.content, greatest(1, strpos(m.content, $7) - 40), 120)")}
  FROM messages m JOIN sessions s ON s.id = m.session_id
  WHERE m.content ILIKE $1 AND ${likeAsciiCase("m.content", "$1")} ${FILTERS}
  ORDER BY m.timestamp DESC, m.id DESC LIMIT $5 OFFSET $6`;

/** The hits with the message before and after each in the same session, by (timestamp, id). */
const WITH_CONTEXT = (hits: string) => `SELECT h.*, substr(COALESCE(self.content, ''), 1, 200) AS self_content,
    prev.role AS prev_role, prev.content AS prev_content, next.role AS next_role, next.content AS next_content
  FROM (${hits}) h
  JOIN messages self ON self.id = h.id
  LEFT JOIN LATERAL (SELECT p.role, substr(COALESCE(p.content, ''), 1, 200) AS content FROM messages p
    WHERE p.session_id = h.session_id AND (p.timestamp, p.id) < (h.timestamp, h.id)
    ORDER BY p.timestamp DESC, p.id DESC LIMIT 1) prev ON true
  LEFT JOIN LATERAL (SELECT n.role, substr(COALESCE(n.content, ''), 1, 200) AS content FROM messages n
    WHERE n.session_id = h.session_id AND (n.timestamp, n.id) > (h.timestamp, h.id)
    ORDER BY n.timestamp, n.id LIMIT 1) next ON true`;

const FTS_WITH_CONTEXT = `${WITH_CONTEXT(FTS_SQL)} ORDER BY ts_rank(sessiondb_fts_vector(self.content), to_tsquery('simple', $1)) DESC, h.timestamp DESC, h.id DESC`;
const LIKE_WITH_CONTEXT = `${WITH_CONTEXT(LIKE_SQL)} ORDER BY h.timestamp DESC, h.id DESC`;

type HitRow = Omit<SearchHit, "context"> & {
  self_content: string;
  prev_role: string | null;
  prev_content: string | null;
  next_role: string | null;
  next_content: string | null;
};

function toHit(row: HitRow): SearchHit {
  const { self_content, prev_role, prev_content, next_role, next_content, ...hit } = row;
  const context = [];
  if (prev_role !== null) context.push({ role: prev_role, content: prev_content ?? "" });
  context.push({ role: hit.role, content: self_content });
  if (next_role !== null) context.push({ role: next_role, content: next_content ?? "" });
  return { ...hit, snippet: hit.snippet ?? "", context };
}

async function search(db: PgQueryable, p: SearchParams): Promise<SearchHit[]> {
  if (p.matchesNothing || p.query.trim() === "") return [];
  const sanitized = sanitizeFtsQuery(p.query);
  if (sanitized === "") return [];
  const filters = [list(p.sources), list(p.excluded), list(p.roles), p.limit, p.offset];
  const tsquery = ftsToTsquery(sanitized);
  let hits: HitRow[] = [];
  if (tsquery !== null) {
    try {
      hits = await rows<HitRow>(db, FTS_WITH_CONTEXT, [tsquery, ...filters]);
    } catch (err) {
      // A query the text-search parser refuses finds nothing, as an FTS5 syntax error does.
      if ((err as { code?: unknown }).code !== "42601") throw err;
    }
  }
  if (hits.length === 0 && containsCjk(sanitized)) {
    const raw = p.query.replace(/^[\s"]+|[\s"]+$/g, "");
    // PostgreSQL text holds no U+0000, so a query with one matches nothing.
    if (raw.includes("\0")) return [];
    hits = await rows<HitRow>(db, LIKE_WITH_CONTEXT, [`%${escapeLike(raw)}%`, ...filters, raw]);
  }
  return hits.map(toHit);
}

export const searchRunners = {
  searchMessages: search,
} satisfies Partial<PgRunners>;

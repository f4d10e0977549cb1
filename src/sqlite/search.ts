/** Full-text search over messages: the query sanitizer, FTS5, the CJK fallback (SPEC §3.1). */
import { errorCode } from "../errors.js";
import type { ContextMessage, SearchHit } from "../session-db.js";
import { CANDIDATES_FROM, cjkCandidates } from "./cjk-search.js";
import { escapeLike, sql, type Connection } from "./connection.js";
import { read } from "./define-operation.js";
import { containsCjk, sanitizeFtsQuery } from "../operations/fts-query.js";
import type { SearchParams } from "../operations/search-params.js";
import { inReadSnapshot } from "./transaction.js";

type HitRow = Omit<SearchHit, "context"> & { self_content: string };

/**
 * The filters shared by the FTS query and the LIKE fallback (lists travel as JSON arrays). A
 * search's SQL holds only those it has: one left in as `@x IS NULL OR …` is checked on every
 * matching row (a fifth of the rare-term FTS statement's time at 1,000,000 messages).
 */
const FILTERS = {
  sources: " AND s.source IN (SELECT value FROM json_each(@sources))",
  excluded: " AND s.source NOT IN (SELECT value FROM json_each(@excluded))",
  roles: " AND m.role IN (SELECT value FROM json_each(@roles))",
} as const;

type FilterName = keyof typeof FILTERS;

/** The search's filters as SQL (`{filters}`) and their parameters. */
function filtersOf(p: SearchParams): { text: string; params: Partial<Record<FilterName, string>> } {
  let text = "";
  const params: Partial<Record<FilterName, string>> = {};
  for (const name of Object.keys(FILTERS) as FilterName[]) {
    const list = p[name];
    if (list === null) continue;
    text += FILTERS[name];
    params[name] = list;
  }
  return { text, params };
}

const HIT_COLUMNS = `m.id, m.session_id, m.role, {snippet} AS snippet, m.timestamp, m.tool_name, s.source, s.model,
  s.started_at AS session_started, substr(COALESCE(m.content, ''), 1, 200) AS self_content`;

const FTS_SQL = `SELECT ${HIT_COLUMNS.replace("{snippet}", "snippet(messages_fts, 0, '>>>', '<<<', '...', 40)")}
  FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid JOIN sessions s ON s.id = m.session_id
  WHERE messages_fts MATCH @match {filters}
  ORDER BY rank LIMIT @limit OFFSET @offset`;

/** The CJK fallback's condition on a message `m` of a session `s`. */
const LIKE_MATCH = `m.content LIKE @pattern ESCAPE '\\' {filters}`;

/**
 * `{from}` is the plain scan (`messages m`) or the CJK index's candidates (./cjk-search.ts). The
 * page is chosen first and the snippets cut for its rows only.
 */
const LIKE_SQL = `WITH page AS MATERIALIZED (SELECT m.id, m.timestamp FROM {from} JOIN sessions s ON s.id = m.session_id
    WHERE {match}
    ORDER BY m.timestamp DESC, m.id DESC LIMIT @limit OFFSET @offset)
  SELECT ${HIT_COLUMNS.replace("{snippet}", "substr(m.content, max(1, instr(m.content, @raw) - 40), 120)")}
  FROM page CROSS JOIN messages m ON m.id = page.id JOIN sessions s ON s.id = m.session_id
  ORDER BY page.timestamp DESC, page.id DESC`;

const PREV_SQL = `SELECT role, substr(COALESCE(content, ''), 1, 200) AS content FROM messages
  WHERE session_id = @session AND (timestamp < @ts OR (timestamp = @ts AND id < @id)) ORDER BY timestamp DESC, id DESC LIMIT 1`;
const NEXT_SQL = `SELECT role, substr(COALESCE(content, ''), 1, 200) AS content FROM messages
  WHERE session_id = @session AND (timestamp > @ts OR (timestamp = @ts AND id > @id)) ORDER BY timestamp, id LIMIT 1`;

function isFtsQueryError(err: unknown): boolean {
  return errorCode(err) === "SQLITE_ERROR";
}

/** The hit with the message before and after it in the same session, by (timestamp, id). */
function withContext(db: Connection, row: HitRow): SearchHit {
  const { self_content, ...hit } = row;
  const context: ContextMessage[] = [];
  const at = { session: hit.session_id, ts: hit.timestamp, id: hit.id };
  const prev = sql(db, PREV_SQL).get(at) as ContextMessage | undefined;
  const next = sql(db, NEXT_SQL).get(at) as ContextMessage | undefined;
  if (prev !== undefined) context.push({ role: prev.role, content: prev.content });
  context.push({ role: hit.role, content: self_content });
  if (next !== undefined) context.push({ role: next.role, content: next.content });
  return { ...hit, snippet: hit.snippet ?? "", context };
}

function search(db: Connection, p: SearchParams): SearchHit[] {
  if (p.matchesNothing || p.query.trim() === "") return [];
  const sanitized = sanitizeFtsQuery(p.query);
  if (sanitized === "") return [];
  const filters = filtersOf(p);
  const paged = { ...filters.params, limit: p.limit, offset: p.offset };
  let hits: HitRow[] = [];
  try {
    hits = sql(db, FTS_SQL.replace("{filters}", filters.text)).all({ ...paged, match: sanitized }) as HitRow[];
  } catch (err) {
    if (!isFtsQueryError(err)) throw err;
    // A query FTS5 cannot parse finds nothing (never an exception); CJK text still gets the fallback.
  }
  if (hits.length === 0 && containsCjk(sanitized)) {
    const raw = p.query.replace(/^[\s"]+|[\s"]+$/g, "");
    const like = { ...paged, raw, pattern: `%${escapeLike(raw)}%` };
    const match = LIKE_MATCH.replace("{filters}", filters.text);
    // The candidates and the page they give must come from the same moment: a message deleted
    // in between would leave the page short.
    hits = inReadSnapshot(db, () => {
      const candidates = cjkCandidates(db, raw, like, p.limit + p.offset, match);
      const page = LIKE_SQL.replace("{match}", match);
      return (candidates === null
        ? sql(db, page.replace("{from}", "messages m")).all(like)
        : sql(db, page.replace("{from}", CANDIDATES_FROM)).all({ ...like, candidates })) as HitRow[];
    });
  }
  return hits.map((hit) => withContext(db, hit));
}

export const searchMessages = read("searchMessages", search);

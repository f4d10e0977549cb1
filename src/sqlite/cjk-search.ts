/**
 * The CJK fallback (SPEC §3.1 step 4) served from the CJK index (./cjk-index.ts): which messages
 * can be on the page the LIKE scan would return, found without reading every match.
 *
 * The page is ordered by `timestamp DESC, id DESC`. The index is walked from the newest id down;
 * at each entry its bound says how late any message at or below it can be. Once `limit + offset`
 * collected hits rank above that bound, nothing further down can reach the page, and the walk
 * stops. Ids need not follow time for this to hold (imports, writers with other clocks): a late
 * message below an early one only makes the walk go further. Collected besides, whatever the
 * bounds do not cover: messages above the mark (not indexed yet) and the outliers. The caller
 * orders the candidates exactly as the scan does and cuts the page.
 *
 * Queries of 3 characters or more walk the trigram matches; shorter ones, which no trigram can
 * serve, walk every indexed message (those with CJK, which alone can hold a CJK query).
 */
import { hasCjkIndex, MIN_INDEXED_LENGTH, VALID_MARK_SQL } from "./cjk-index.js";
import { sql, type Connection } from "./connection.js";

/** The fallback's `FROM` over the candidates (`@candidates`, a JSON array of ids); `m` = messages. */
export const CANDIDATES_FROM = "(SELECT value AS id FROM json_each(@candidates)) AS c CROSS JOIN messages m ON m.id = c.id";

const MARK_SQL = `SELECT ${VALID_MARK_SQL} AS mark`;

/** `{match}`: the fallback's condition on `m` (messages) and `s` (sessions). */
const OUTSIDE_SQL = `SELECT m.id, m.timestamp AS ts FROM messages m JOIN sessions s ON s.id = m.session_id
    WHERE m.id > @mark AND {match}
  UNION ALL
  SELECT m.id, m.timestamp AS ts FROM messages_cjk_outliers o CROSS JOIN messages m ON m.id = o.id
    JOIN sessions s ON s.id = m.session_id WHERE o.id <= @mark AND {match}`;

/** Stale entries (deleted messages) come out with `pass` 0; `boundId` is null if the bound is missing. */
const WALK_COLUMNS = "b.id AS boundId, b.bound, m.timestamp AS ts, (s.id IS NOT NULL AND {match}) AS pass";
const TRIGRAM_WALK_SQL = `SELECT c.rowid AS id, ${WALK_COLUMNS}
  FROM messages_cjk c LEFT JOIN messages_cjk_bound b ON b.id = c.rowid
  LEFT JOIN messages m ON m.id = c.rowid LEFT JOIN sessions s ON s.id = m.session_id
  WHERE messages_cjk MATCH @trigrams AND c.rowid <= @mark ORDER BY c.rowid DESC`;
const SHORT_WALK_SQL = `SELECT b.id, ${WALK_COLUMNS}
  FROM messages_cjk_bound b LEFT JOIN messages m ON m.id = b.id LEFT JOIN sessions s ON s.id = m.session_id
  WHERE b.id <= @mark ORDER BY b.id DESC`;

interface WalkRow {
  id: number;
  boundId: number | null;
  bound: number | null;
  ts: unknown;
  pass: 0 | 1 | null;
}

/**
 * The candidates for the fallback's page (a JSON array of ids for `@candidates`), or null when
 * the plain scan must serve it: no index in the file, or none of it trustworthy yet.
 * `params` are the fallback's, `match` its condition; `need` is `limit + offset`.
 */
export function cjkCandidates(db: Connection, raw: string, params: Record<string, unknown>, need: number, match: string): string | null {
  if (!hasCjkIndex(db)) return null;
  const mark = sql(db, MARK_SQL).pluck().get() as number;
  if (mark === 0) return null;
  const atMark = { ...params, mark };
  const ranks = new RankCount();
  const candidates = new Set<number>();
  for (const row of sql(db, OUTSIDE_SQL.replaceAll("{match}", match)).all(atMark) as Array<{ id: number; ts: unknown }>) {
    if (candidates.has(row.id)) continue;
    candidates.add(row.id);
    ranks.add(row.id, row.ts);
  }
  const short = [...raw].length < MIN_INDEXED_LENGTH;
  const walk = short
    ? sql(db, SHORT_WALK_SQL.replace("{match}", match)).iterate(atMark)
    : sql(db, TRIGRAM_WALK_SQL.replace("{match}", match)).iterate({ ...atMark, trigrams: trigramQuery(raw) });
  for (const row of walk as IterableIterator<WalkRow>) {
    if (row.boundId !== null) ranks.settle(row.bound, row.id);
    if (ranks.above >= need) break; // leaving the loop ends the query
    if (row.pass === 1 && !candidates.has(row.id)) {
      candidates.add(row.id);
      ranks.add(row.id, row.ts);
    }
  }
  return JSON.stringify([...candidates]);
}

/**
 * Counts the collected hits that rank (by SQLite's `timestamp DESC, id DESC`) above every
 * message the walk has still to reach: those at or below the entry where it stands, whose
 * timestamps are finite numbers no later than the lowest bound seen so far.
 */
class RankCount {
  /** Hits known to rank above everything left. */
  above = 0;
  /** The others with a numeric timestamp, latest first. */
  #pending: Array<{ id: number; ts: number }> = [];
  /** The others with a NULL timestamp: SQLite sorts NULL first ascending, so last here. */
  #nulls = 0;
  /** Every message left is at most this late; -Infinity once none is left. */
  #bound = Infinity;
  /** Every message left has an id at most this. */
  #at = Infinity;

  add(id: number, ts: unknown): void {
    if (ts === null) this.#nulls++;
    // Text and blobs sort after every number: above all that is left (finite numbers).
    else if (typeof ts !== "number") this.above++;
    else {
      const hit = { id, ts };
      const pending = this.#pending;
      let lo = 0;
      let hi = pending.length;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        const other = pending[mid]!;
        if (other.ts > ts || (other.ts === ts && other.id > id)) lo = mid + 1;
        else hi = mid;
      }
      pending.splice(lo, 0, hit);
      this.#release();
    }
  }

  /** The walk has reached entry `at`, whose bound is `bound` (null: no finite timestamp at or below it). */
  settle(bound: number | null, at: number): void {
    this.#bound = Math.min(this.#bound, bound ?? -Infinity);
    this.#at = at;
    this.#release();
  }

  #release(): void {
    const pending = this.#pending;
    let n = 0;
    while (n < pending.length && this.#ranksAbove(pending[n]!)) n++;
    if (n > 0) pending.splice(0, n);
    this.above += n;
    if (this.#bound === -Infinity) {
      this.above += this.#nulls;
      this.#nulls = 0;
    }
  }

  #ranksAbove(hit: { id: number; ts: number }): boolean {
    return hit.ts > this.#bound || (hit.ts === this.#bound && hit.id > this.#at);
  }
}

/** Distinct trigrams a query's AND takes at most: fewer only widens the candidates. */
const MAX_TRIGRAMS = 32;

/**
 * Every trigram of the text, each a quoted term, ANDed: with `detail=none` the index keeps no
 * positions (so no phrase queries), and a row holding all of them is a candidate.
 */
function trigramQuery(raw: string): string {
  const chars = [...raw];
  const trigrams = new Set<string>();
  for (let i = 0; i + MIN_INDEXED_LENGTH <= chars.length && trigrams.size < MAX_TRIGRAMS; i++) {
    trigrams.add(chars.slice(i, i + MIN_INDEXED_LENGTH).join(""));
  }
  return [...trigrams].map((t) => `"${t.replace(/"/g, '""')}"`).join(" AND ");
}

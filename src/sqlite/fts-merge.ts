/**
 * `sessiondb optimize`: the full-text indexes' segments merged into one, in small steps. FTS5's
 * `optimize` command does it in one statement, which on a big index holds the write lock for
 * seconds (Hermes's stalled 9–18 s); `('merge', -N)` does the same work N pages at a time, so each
 * step is its own short transaction and the writer runs its batches in between.
 */
import { sql, type Connection } from "./connection.js";

/** The indexes merged, in order: the full-text index, then the CJK index when the file has it. */
export const MERGED_INDEXES = ["messages_fts", "messages_cjk"] as const;

/**
 * One merge step of about `pages` pages on `table`, in the caller's transaction. True while there
 * is more to merge: FTS5 writes at most one row when it found nothing left to do.
 */
export function ftsMergeStep(db: Connection, table: (typeof MERGED_INDEXES)[number], pages: number): boolean {
  const before = sql(db, "SELECT total_changes()").pluck().get() as number;
  sql(db, `INSERT INTO ${table}(${table}, rank) VALUES ('merge', ?)`).run(-Math.max(1, Math.floor(pages)));
  return (sql(db, "SELECT total_changes()").pluck().get() as number) - before >= 2;
}

/**
 * Pages per step, adjusted after each one so a step takes about `targetMs`: merging cost per page
 * varies with the index, and the lock must never be held long.
 */
export class MergePace {
  #pages = 64;
  readonly #targetMs: number;

  constructor(targetMs: number) {
    this.#targetMs = targetMs;
  }

  get pages(): number {
    return this.#pages;
  }

  took(ms: number): void {
    if (ms > this.#targetMs) this.#pages = Math.max(4, Math.floor(this.#pages / 2));
    else if (ms < this.#targetMs / 4) this.#pages = Math.min(4096, this.#pages * 2);
  }
}

/**
 * The writer's upkeep of the CJK search index (cjk-index.ts): made when the file has none, caught
 * up now and then inside a group commit, and, while no request waits, caught up on the backlog and
 * swept of deleted messages' entries in transactions of its own.
 */
import { isBusyError, toSessionDBError } from "../src/errors.js";
import { catchUpCjkIndex, createCjkIndex, hasCjkIndex, sweepCjkIndex } from "../src/sqlite/cjk-index.js";
import { inWriteTransaction, retryBusySync } from "../src/sqlite/transaction.js";
import type { WriteJob } from "../src/daemon/writer-messages.js";
import { OPERATIONS } from "../src/operation-catalogue.js";
import type { FileGuard } from "./file-guard.js";
import type { WalUpkeep } from "./wal-upkeep.js";
import type { WriterContext } from "./writer-context.js";
import { OPEN_RETRY } from "./writer-waits.js";

/** Messages indexed per idle catch-up transaction. */
const CJK_IDLE_ROWS = 5000;
/**
 * The CJK catch-up rides in a group commit once this many requests have been committed since the
 * last one, or this long has passed, not in every commit: its fixed cost (the index's state, its
 * mark's page in the WAL) was a sixth of a lone append's time in the writer. Searches stay exact
 * meanwhile: they scan the messages above the mark. What is left when the writer goes idle is
 * caught up after `idleCheckpointMs` of quiet, before the checkpoint.
 */
const CJK_CATCH_UP_REQUESTS = 128;
const CJK_CATCH_UP_MS = 250;

/**
 * Creates the CJK search index when the file has none. Best effort: a file this process may
 * not write (or a SQLite without the trigram tokenizer) is served without it, by the LIKE scan.
 * Returns whether the file has it.
 */
export function ensureCjkIndex(ctx: Pick<WriterContext, "conn" | "post">): boolean {
  const { conn } = ctx;
  try {
    if (!hasCjkIndex(conn)) retryBusySync(OPEN_RETRY, () => inWriteTransaction(conn, () => createCjkIndex(conn)));
  } catch (err) {
    ctx.post({ type: "log", line: `no CJK search index: ${toSessionDBError(err).message}` });
  }
  return hasCjkIndex(conn);
}

export class CjkUpkeep {
  readonly #ctx: WriterContext;
  readonly #guard: FileGuard;
  readonly #wal: WalUpkeep;
  /** The file has the CJK index (this SQLite could make it, and the file is ours to write). */
  readonly #indexed: boolean;
  /** True while the CJK index has messages left to catch up on, or stale entries to sweep. */
  #behind: boolean;
  /** True from the start and after messages were deleted, until a sweep has gone once round. */
  #sweep: boolean;
  /** Requests committed since the CJK index last caught up, and when that was. */
  #uncaughtRequests = 0;
  #caughtUpAt = 0;

  /** `indexed`: what `ensureCjkIndex` found. */
  constructor(ctx: WriterContext, guard: FileGuard, wal: WalUpkeep, indexed: boolean) {
    this.#ctx = ctx;
    this.#guard = guard;
    this.#wal = wal;
    this.#indexed = indexed;
    this.#behind = indexed;
    this.#sweep = indexed;
  }

  /** There is upkeep to do while no request waits. */
  get behind(): boolean {
    return this.#behind;
  }

  /** In a group commit's transaction, once `jobs` ran (locked at `lockedAt`): catches up when due. */
  afterBatch(jobs: WriteJob[], lockedAt: number): void {
    if (!this.#indexed) return;
    this.#uncaughtRequests += jobs.length;
    if (jobs.some((j) => OPERATIONS[j.op].deletesMessages)) this.#behind = this.#sweep = true;
    if (this.#behind || this.#uncaughtRequests >= CJK_CATCH_UP_REQUESTS || lockedAt - this.#caughtUpAt >= CJK_CATCH_UP_MS) {
      this.#behind = catchUpCjkIndex(this.#ctx.conn) || this.#behind;
      this.#caughtUp();
    }
  }

  /**
   * Quiet at last: the index is to catch up on the last requests in a transaction of its own.
   * Once per quiet spell: false (and nothing to do) when no request came since the last catch-up.
   */
  quiet(): boolean {
    if (this.#uncaughtRequests === 0) return false;
    this.#uncaughtRequests = 0;
    this.#behind = true;
    return true;
  }

  /** One chunk of the upkeep while no request waits. */
  idleStep(): void {
    this.#behind = this.#idleCatchUp();
  }

  /**
   * Indexes the backlog (a large file's first start, the requests since the last catch-up), then,
   * at the start and after deletions, sweeps the entries of deleted messages once round. True
   * while there is more. A locked file just means later.
   */
  #idleCatchUp(): boolean {
    const { conn } = this.#ctx;
    const guard = this.#guard;
    try {
      if (guard.walLost !== null) return false;
      return inWriteTransaction(conn, () => {
        const more = catchUpCjkIndex(conn, CJK_IDLE_ROWS);
        this.#caughtUp();
        let again = more;
        if (!more && this.#sweep) again = this.#sweep = sweepCjkIndex(conn);
        // Rolled back (by the throw) rather than committed into a WAL that is no longer ours.
        if (!guard.stillOurs()) throw guard.notOursError();
        return again;
      });
    } catch (err) {
      if (guard.walLost !== null || guard.fileReplaced) {
        this.#wal.salvage();
        return false;
      }
      if (!isBusyError(err)) this.#ctx.post({ type: "log", line: `CJK index upkeep failed: ${toSessionDBError(err).message}` });
      return false;
    }
  }

  #caughtUp(): void {
    this.#uncaughtRequests = 0;
    this.#caughtUpAt = performance.now();
  }
}

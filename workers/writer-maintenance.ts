/**
 * The maintenance the writer runs between its batches, one task at a time: a backup (SQLite's
 * backup API, a few pages per step), the full-text indexes merged in short transactions, VACUUM.
 */
import { SessionDBError, isBusyError, toWireError } from "../src/errors.js";
import { ftsMergeStep, MergePace, MERGED_INDEXES } from "../src/sqlite/fts-merge.js";
import { snapshotCounts } from "../src/sqlite/integrity-check.js";
import { tableExists } from "../src/sqlite/schema.js";
import { retryBusySync } from "../src/sqlite/transaction.js";
import type { BackupOutcome, MaintenanceTask, MergeOutcome } from "../src/daemon/writer-messages.js";
import type { FileGuard } from "./file-guard.js";
import type { WriterContext } from "./writer-context.js";
import { OPEN_RETRY } from "./writer-waits.js";

/** Pages a backup copies per step, between batches: a millisecond or two of the writer's time. */
const BACKUP_STEP_PAGES = 256;
/** What a merge step aims to take (MergePace): the lock is never held much longer. */
const MERGE_STEP_MS = 5;

interface Merge {
  id: number;
  indexes: string[];
  at: number;
  pace: MergePace;
  steps: number;
  maxStepMs: number;
}

type Outcome = { ok: true; result: unknown } | { ok: false; error: unknown };

function stopped(): SessionDBError {
  return new SessionDBError("CLOSED", "the daemon is shutting down: the maintenance did not run to its end");
}

export class WriterMaintenance {
  readonly #ctx: WriterContext;
  readonly #guard: FileGuard;
  /** The writer's loop, to take its next turn once a backup is done. */
  readonly #schedule: () => void;
  /** The daemon is shutting down: a backup under way is stopped. */
  readonly #closing: () => boolean;
  /** Maintenance asked for and not started yet: one task runs at a time. */
  readonly #queue: Array<{ id: number; task: MaintenanceTask }> = [];
  /** The index merge under way, done one step per turn of the loop. */
  #merging: Merge | null = null;
  /** True while a backup runs: its steps are turns of the event loop of their own, between batches. */
  #backingUp = false;

  constructor(ctx: WriterContext, guard: FileGuard, schedule: () => void, closing: () => boolean) {
    this.#ctx = ctx;
    this.#guard = guard;
    this.#schedule = schedule;
    this.#closing = closing;
  }

  enqueue(id: number, task: MaintenanceTask): void {
    this.#queue.push({ id, task });
  }

  /** An index merge is under way (a step is due at each turn the writes leave it). */
  get merging(): boolean {
    return this.#merging !== null;
  }

  get backingUp(): boolean {
    return this.#backingUp;
  }

  /** A task waits and none runs. */
  get due(): boolean {
    return this.#queue.length > 0 && !this.#busy();
  }

  /** Starts the next task. */
  start(): void {
    const next = this.#queue.shift()!;
    const guard = this.#guard;
    // Nothing more is written (or copied) once the WAL is not ours.
    if (guard.walLost !== null || guard.fileReplaced || !guard.stillOurs(false)) {
      this.#maintained(next.id, { ok: false, error: guard.notOursError() });
      return;
    }
    switch (next.task.kind) {
      case "backup":
        this.#startBackup(next.id, next.task.dest);
        break;
      case "mergeIndexes": {
        const indexes = MERGED_INDEXES.filter((t) => tableExists(this.#ctx.conn, t));
        this.#merging = { id: next.id, indexes, at: 0, pace: new MergePace(MERGE_STEP_MS), steps: 0, maxStepMs: 0 };
        break;
      }
      case "vacuum":
        // The whole file rewritten in one statement: the writes wait (why the CLI asks for --force
        // while other clients are connected).
        try {
          retryBusySync(OPEN_RETRY, () => this.#ctx.conn.exec("VACUUM"));
          this.#maintained(next.id, { ok: true, result: null });
        } catch (err) {
          this.#maintained(next.id, { ok: false, error: err });
        }
        break;
    }
  }

  /** One step of the index merge, in a transaction of its own; another process holding the lock means the next turn. */
  mergeStep(): void {
    const { conn } = this.#ctx;
    const tx = this.#ctx.tx!;
    const m = this.#merging!;
    const table = m.indexes[m.at];
    if (table === undefined) {
      this.#merging = null;
      const result: MergeOutcome = { indexes: m.indexes, steps: m.steps, maxStepMs: m.maxStepMs };
      this.#maintained(m.id, { ok: true, result });
      return;
    }
    const start = performance.now();
    try {
      tx.begin.run();
    } catch (err) {
      if (isBusyError(err)) return;
      this.#merging = null;
      this.#maintained(m.id, { ok: false, error: err });
      return;
    }
    let more: boolean;
    try {
      more = ftsMergeStep(conn, table as (typeof MERGED_INDEXES)[number], m.pace.pages);
      if (!this.#guard.stillOurs()) throw this.#guard.notOursError();
      tx.commit.run();
    } catch (err) {
      if (conn.inTransaction) tx.rollback.run();
      this.#merging = null;
      this.#maintained(m.id, { ok: false, error: err });
      return;
    }
    const ms = performance.now() - start;
    m.pace.took(ms);
    m.steps++;
    m.maxStepMs = Math.max(m.maxStepMs, ms);
    if (!more) m.at++;
  }

  /** The daemon is stopping: the tasks not started, and a merge under way, are answered CLOSED. */
  stop(): void {
    for (const job of this.#queue.splice(0)) this.#maintained(job.id, { ok: false, error: stopped() });
    if (this.#merging !== null) this.#maintained(this.#merging.id, { ok: false, error: stopped() });
    this.#merging = null;
  }

  #busy(): boolean {
    return this.#backingUp || this.#merging !== null;
  }

  #maintained(id: number, outcome: Outcome): void {
    this.#ctx.post({ type: "maintained", id, outcome: outcome.ok ? outcome : { ok: false, error: toWireError(outcome.error) } });
  }

  /**
   * The backup runs on this connection, so the writes made on it between steps go to the copy too
   * (SQLite's backup API updates the destination when its own connection writes the source): it
   * never restarts, no read transaction spans it (the WAL stays under its bound), and when the last
   * step is done the copy is the file as this connection sees it. The counts are read in the same
   * turn, before any batch can run: the copy's must match them.
   */
  #startBackup(id: number, dest: string): void {
    const { conn } = this.#ctx;
    this.#backingUp = true;
    conn
      .backup(dest, {
        progress: () => {
          if (this.#closing()) throw new SessionDBError("CLOSED", "the daemon is shutting down: the backup was stopped");
          return BACKUP_STEP_PAGES;
        },
      })
      .then((done): BackupOutcome => ({ pages: done.totalPages, ...snapshotCounts(conn) }))
      .then(
        (result) => this.#maintained(id, { ok: true, result }),
        (err: unknown) => this.#maintained(id, { ok: false, error: err }),
      )
      .finally(() => {
        this.#backingUp = false;
        this.#schedule();
      });
  }
}

/**
 * The writer's checkpoints: the ones the daemon asks for, the idle PASSIVE one, the TRUNCATE at
 * the close, and the two that give the WAL back: after a full disk (before each batch until one
 * succeeds) and when the WAL was unlinked (at once, copying what it holds into the database).
 */
import { toWireError } from "../src/errors.js";
import type { CheckpointResult } from "../src/daemon/writer-messages.js";
import { walLostError, type FileGuard } from "./file-guard.js";
import type { WriterContext } from "./writer-context.js";

export class WalUpkeep {
  readonly #ctx: WriterContext;
  readonly #guard: FileGuard;
  /**
   * Set when a write failed with an I/O error (a full disk): until a TRUNCATE checkpoint succeeds,
   * one runs before each batch, so the WAL's space goes back to the disk as soon as there is room
   * to copy it into the database.
   */
  #reclaim = false;

  constructor(ctx: WriterContext, guard: FileGuard) {
    this.#ctx = ctx;
    this.#guard = guard;
  }

  /** A write failed with an I/O error: the WAL's space is reclaimed before the next batches. */
  reclaimSoon(): void {
    this.#reclaim = true;
  }

  /** Before a batch: the TRUNCATE checkpoint a full disk asked for, until one succeeds. */
  reclaimIfDue(): void {
    if (this.#reclaim) this.#reclaim = this.checkpoint("TRUNCATE", false)?.log !== 0;
  }

  /** The checkpoint's result, or null when it failed (the failure goes to the daemon, which logs it). */
  checkpoint(mode: "PASSIVE" | "TRUNCATE", requested: boolean): CheckpointResult | null {
    const { post } = this.#ctx;
    const walLost = this.#guard.walLost;
    if (walLost?.kind === "truncated") {
      // What is left of the WAL stays as cut: a checkpoint would copy a part of it, and no more.
      post({ type: "checkpointFailed", error: toWireError(walLostError(walLost)), requested });
      return null;
    }
    if (this.#ctx.newerVersion !== null) {
      // Not our file to write: a checkpoint would copy the WAL into it.
      const result = { mode, busy: 0, log: 0, checkpointed: 0 };
      post({ type: "checkpointed", result, requested });
      return result;
    }
    try {
      const row = this.#ctx.conn.pragma(`wal_checkpoint(${mode})`, { simple: false }) as Array<Record<string, number>>;
      const r = row[0] ?? {};
      const result = { mode, busy: r.busy ?? 0, log: r.log ?? 0, checkpointed: r.checkpointed ?? 0 };
      post({ type: "checkpointed", result, requested });
      return result;
    } catch (err) {
      post({ type: "checkpointFailed", error: toWireError(err), requested });
      return null;
    }
  }

  /** An unlinked WAL is copied into the database at once (outside any transaction: a checkpoint cannot run in one). */
  salvage(): void {
    if (this.#guard.walLost?.kind === "removed" && !this.#ctx.conn.inTransaction) this.checkpoint("PASSIVE", false);
  }
}

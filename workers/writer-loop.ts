/**
 * The writer thread's loop: each turn runs one thing (a group commit, a merge step, a requested
 * checkpoint, a maintenance task, a chunk of CJK upkeep, or the close) and schedules the next;
 * when nothing is left it waits, and after `idleCheckpointMs` of quiet runs a checkpoint.
 */
import { jitterMs } from "../src/sqlite/transaction.js";
import type { ToWriter } from "../src/daemon/writer-messages.js";
import { CjkUpkeep } from "./cjk-upkeep.js";
import { FaultInjection } from "./fault-injection.js";
import type { FileGuard } from "./file-guard.js";
import { GroupCommit } from "./group-commit.js";
import { WalUpkeep } from "./wal-upkeep.js";
import type { WriterContext } from "./writer-context.js";
import { WriterFeed } from "./writer-feed.js";
import { WriterMaintenance } from "./writer-maintenance.js";
import { LOCK_RETRY, pause } from "./writer-waits.js";

export class WriterLoop {
  readonly #ctx: WriterContext;
  readonly #guard: FileGuard;
  readonly #wal: WalUpkeep;
  readonly #cjk: CjkUpkeep;
  readonly #faults: FaultInjection;
  readonly #writes: GroupCommit;
  readonly #feed: WriterFeed;
  readonly #maintenance: WriterMaintenance;
  /** Called once the connection is closed and the daemon told. */
  readonly #closePort: () => void;
  readonly #turn = (): void => this.#step();
  #pendingCheckpoint: "PASSIVE" | "TRUNCATE" | null = null;
  #closing = false;
  #scheduled = false;
  /**
   * Fires `idleCheckpointMs` after the loop last went idle, while `#idleArmed`. One timer for the
   * thread's life, refreshed as each turn ends idle: no timer made and cancelled per batch.
   */
  #idleTimer: NodeJS.Timeout | null = null;
  #idleArmed = false;
  /** When the current run of back-to-back transactions began (null while idle). */
  #busySince: number | null = null;
  /** Set by the daemon while it makes room for a TRUNCATE checkpoint: writes wait in the queue. */
  #held = false;
  /** Set from a merge step to the next batch: writes and merge steps take turns, neither starves. */
  #mergeTurn = false;

  /** `cjkIndexed`: the file has the CJK index (ensureCjkIndex). */
  constructor(ctx: WriterContext, guard: FileGuard, cjkIndexed: boolean, closePort: () => void) {
    this.#ctx = ctx;
    this.#guard = guard;
    this.#wal = new WalUpkeep(ctx, guard);
    this.#cjk = new CjkUpkeep(ctx, guard, this.#wal, cjkIndexed);
    this.#faults = new FaultInjection(ctx.config.faultInjection, ctx.conn);
    this.#feed = new WriterFeed(ctx);
    this.#writes = new GroupCommit(ctx, guard, this.#wal, this.#cjk, this.#faults, this.#feed);
    this.#maintenance = new WriterMaintenance(ctx, guard, () => this.#schedule(), () => this.#closing);
    this.#closePort = closePort;
  }

  /** The file's schema version when it is newer than ours (served read-only), else null. */
  get newerVersion(): number | null {
    return this.#ctx.newerVersion;
  }

  /** Starts the loop: the CJK index may have a backlog to catch up on before any request comes. */
  start(): void {
    if (this.#cjk.behind) this.#schedule();
  }

  receive(message: ToWriter): void {
    switch (message.type) {
      case "writes":
        this.#writes.enqueue(message.jobs);
        break;
      case "checkpoint":
        this.#pendingCheckpoint = message.mode;
        break;
      case "hold":
        this.#held = message.on;
        break;
      case "close":
        this.#closing = true;
        this.#held = false;
        break;
      case "stopIdle":
        // Only with nothing under way: a CJK backlog (or the last requests' catch-up, which quiet()
        // starts) or a merge goes on while no client is connected; the daemon asks again later.
        if (this.#writes.waiting || this.#held || this.#pendingCheckpoint !== null || this.#cjk.behind || this.#cjk.quiet() || this.#maintenance.merging || this.#maintenance.due || this.#maintenance.backingUp) {
          this.#ctx.post({ type: "stayed" });
        } else {
          this.#closing = true;
        }
        break;
      case "crash":
        this.#faults.crash(message.at);
        break;
      case "maintain":
        this.#maintenance.enqueue(message.id, message.task);
        break;
      case "maxPageCount":
        this.#faults.capPages(message.pages);
        break;
      case "feed":
        this.#feed.set(message.on);
        return;
    }
    this.#schedule();
  }

  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    // A turn is coming: an idle timer still pending fires to no effect (or is refreshed first).
    this.#idleArmed = false;
    setImmediate(this.#turn);
  }

  /** One turn of the loop: a batch, a requested checkpoint, or the close; then schedules the next. */
  #step(): void {
    this.#scheduled = false;
    const writes = this.#writes;
    const maintenance = this.#maintenance;
    const held = this.#held;
    const canWrite = writes.waiting && !held;
    if (maintenance.merging && !held && (!canWrite || this.#mergeTurn)) {
      this.#mergeTurn = false;
      maintenance.mergeStep();
    } else if (canWrite) {
      this.#mergeTurn = true;
      // After a long run of back-to-back transactions, leave the lock free for a moment so a
      // process writing the file directly (polling for the lock) gets its turn.
      const now = performance.now();
      this.#busySince ??= now;
      if (now - this.#busySince >= this.#ctx.config.yieldEveryMs) {
        pause(this.#ctx.config.yieldMs);
        this.#busySince = performance.now();
      }
      this.#wal.reclaimIfDue();
      if (!writes.run()) {
        // Another process holds the write lock: try again shortly, with whatever arrives meanwhile.
        this.#scheduled = true;
        setTimeout(this.#turn, jitterMs(LOCK_RETRY));
        return;
      }
    } else if (this.#pendingCheckpoint !== null) {
      const mode = this.#pendingCheckpoint;
      this.#pendingCheckpoint = null;
      this.#wal.checkpoint(mode, true);
    } else if (maintenance.due && !held && !this.#closing) {
      maintenance.start();
    } else if (this.#cjk.behind && !held && !this.#closing) {
      this.#cjk.idleStep();
    } else if (this.#closing && !writes.waiting && !maintenance.backingUp) {
      this.#close();
      return;
    }
    const maintenanceDue = !held && (maintenance.merging || maintenance.due);
    if ((writes.waiting && !held) || this.#pendingCheckpoint !== null || (this.#closing && !held) || (this.#cjk.behind && !held) || maintenanceDue) {
      this.#schedule();
    } else {
      this.#busySince = null;
      this.#idleArmed = true;
      if (this.#idleTimer === null) this.#idleTimer = setTimeout(() => this.#idle(), this.#ctx.config.idleCheckpointMs);
      else this.#idleTimer.refresh();
    }
  }

  /** After `idleCheckpointMs` of quiet. */
  #idle(): void {
    if (!this.#idleArmed) return;
    this.#idleArmed = false;
    if (!this.#held && !this.#closing && this.#cjk.quiet()) {
      // Quiet at last: the index catches up on the last requests in a transaction of its own
      // (this turn ends idle again, and the checkpoint follows). Once per quiet spell: a
      // catch-up that cannot run now does not hold the checkpoint up.
      this.#schedule();
    } else if (this.#guard.stillOurs(false) || this.#guard.walLost?.kind === "removed") {
      // An unlinked WAL is checkpointed too: that copies what it holds into the database.
      this.#wal.checkpoint("PASSIVE", false);
    }
  }

  /** The close, once the queue is empty: what maintenance did not run is answered, the WAL checkpointed, the file closed. */
  #close(): void {
    if (this.#idleTimer !== null) clearTimeout(this.#idleTimer);
    this.#idleArmed = false;
    this.#feed.set(false);
    this.#maintenance.stop();
    // A WAL truncated while the writer was idle is not checkpointed at the stop either.
    if (this.#ctx.newerVersion === null) this.#guard.stillOurs(false);
    this.#wal.checkpoint("TRUNCATE", false);
    this.#guard.close();
    this.#ctx.conn.close();
    this.#ctx.post({ type: "closed" });
    this.#closePort();
  }
}

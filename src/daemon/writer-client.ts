import { Worker } from "node:worker_threads";
import { SessionDBError, fromWireError } from "../errors.js";
import type { WriteOpName } from "../operation-catalogue.js";
import type { WriterCrashPoint, WriterStats } from "../protocol/control.js";
import type {
  CheckpointResult,
  FromWriter,
  MaintenanceTask,
  ToWriter,
  WriteJob,
  WriteOutcome,
  WriterConfig,
} from "./writer-messages.js";

import { CommitHistograms } from "./commit-histograms.js";
import type { FeedEvent } from "../operations/watch-filter.js";

const WRITER_URL = new URL("../../workers/writer.js", import.meta.url);

interface Pending {
  resolve(result: unknown): void;
  reject(err: SessionDBError): void;
}

/** A write waiting for its outcome, with the job itself (sent again when keyed and its thread died). */
interface PendingWrite extends Pending {
  job: WriteJob;
}

const WINDOW = 2048;

/** The last `WINDOW` values, for percentiles that follow the current load. */
export class Window {
  readonly #values: number[] = [];
  #next = 0;

  add(value: number): void {
    if (this.#values.length < WINDOW) this.#values.push(value);
    else this.#values[this.#next] = value;
    this.#next = (this.#next + 1) % WINDOW;
  }

  percentile(p: number): number {
    if (this.#values.length === 0) return 0;
    const sorted = [...this.#values].sort((a, b) => a - b);
    return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
  }
}

/** Commit and lock-hold time percentiles, for `WriterStats`. */
export function commitFigures(commit: Window, lockHeld: Window): Pick<WriterStats, "commitMs" | "lockHeldMs"> {
  return {
    commitMs: { p50: commit.percentile(50), p90: commit.percentile(90), p99: commit.percentile(99), max: commit.percentile(100) },
    lockHeldMs: { p50: lockHeld.percentile(50), p99: lockHeld.percentile(99), max: lockHeld.percentile(100) },
  };
}

/**
 * Where the writer thread is: `stopped` (ended while no client was connected, `stopIdle`) until
 * something asks for it; `starting` until it said it is ready; `stopping` while it ends idle.
 */
export type WriterThreadState = "starting" | "running" | "stopping" | "stopped";

/**
 * The main thread's side of the writer thread: hands it write requests, matches the outcomes
 * that come back after each COMMIT, and restarts the thread if it dies. While no client is
 * connected the daemon may end the thread (`stopIdle`): it checkpoints and closes the file, and
 * whatever asks for it next (a write, a checkpoint, a client connecting: `wake`) starts it again,
 * the requests waiting meanwhile. Its keyed in-flight
 * requests then go to the new thread (a committed one's key answers its first result); the others
 * fail: with INTERNAL when they were not committed, with OUTCOME_UNKNOWN when the thread died while
 * committing them (nothing acknowledged is lost, and nothing failed INTERNAL is there).
 */
export class WriterClient {
  readonly #config: WriterConfig;
  /** The seqs of the batch the thread is committing (see `WriterConfig.committing`). */
  readonly #committing: Float64Array;
  #worker!: Worker;
  /** The current thread said it is ready: until then writes wait in the outbox. */
  #workerReady = false;
  #thread: WriterThreadState = "starting";
  /** Told whenever the thread state changes. */
  #stateWaiters: Array<() => void> = [];
  /** Messages for a thread that is stopping or stopped: sent to the next one once it is ready. */
  #deferred: ToWriter[] = [];
  /** Something asked for the thread while it was stopping: it starts again once it has ended. */
  #wakeAfterStop = false;
  /** The answer to the `stopIdle` under way: true once the thread ended, false if it stayed. */
  #stopAnswer: ((stopped: boolean) => void) | null = null;
  #idleStops = 0;
  /** The fault-injection page cap, set again on a thread started after an idle stop. */
  #pageCap: number | null = null;
  /** Called when the thread starts again after an idle stop (the daemon's idle timer then runs again). */
  onWake: (() => void) | null = null;
  #pending = new Map<number, PendingWrite>();
  #outbox: WriteJob[] = [];
  #checkpointWaiters: Pending[] = [];
  #maintenance = new Map<number, Pending>();
  #maintenanceSeq = 0;
  #seq = 0;
  #closing: Promise<void> | null = null;
  #batches = 0;
  #writes = 0;
  #maxBatch = 0;
  #commitMs = new Window();
  readonly #histograms = new CommitHistograms();
  #lockMs = new Window();
  #checkpoints = { passive: 0, truncate: 0, lastLogFrames: 0 };
  #restarts = 0;
  /** Writes are held (`hold`): the thread is not stopped idle meanwhile. */
  #held = false;
  /** The file's schema version when a newer Hermes made it (the file is served read-only), else null. */
  newerVersion: number | null = null;
  /** Resolves with why, once the writer found its `-wal` or `-shm` removed or truncated (it applies nothing more). */
  readonly walLost: Promise<string>;
  #onWalLost!: (why: string) => void;

  readonly #log: (line: string) => void;
  /** Where the feed's events go while it is on (see `startFeed`); null while off. */
  #feedListener: ((events: FeedEvent[]) => void) | null = null;
  /** A `startFeed` waiting for the thread's answer. */
  #feedStart: Pending | null = null;

  private constructor(config: Omit<WriterConfig, "committing">, log: (line: string) => void) {
    const committing = new SharedArrayBuffer(2 * Float64Array.BYTES_PER_ELEMENT);
    this.#config = { ...config, committing };
    this.#committing = new Float64Array(committing);
    this.#log = log;
    this.walLost = new Promise((resolve) => (this.#onWalLost = resolve));
  }

  /** Starts the writer thread; what it has to say goes to `log` (the daemon's). */
  static async start(config: Omit<WriterConfig, "committing">, log: (line: string) => void): Promise<WriterClient> {
    const client = new WriterClient(config, log);
    await client.#spawn();
    return client;
  }

  get queueDepth(): number {
    return this.#pending.size;
  }

  /** Where the thread is (stats: `writer.thread`). */
  get thread(): WriterThreadState {
    return this.#thread;
  }

  /**
   * Starts the thread if it was stopped idle (as a client connects: the start overlaps its
   * handshake); a stop under way is followed by a start.
   */
  wake(): void {
    if (this.#closing !== null) return;
    if (this.#thread === "stopped") void this.#startAgain();
    else if (this.#thread === "stopping") this.#wakeAfterStop = true;
  }

  /**
   * Ends the thread, checkpointed, if nothing is waiting on it and it has nothing under way (a
   * CJK backlog, a merge): true once it ended, false when it goes on (asked again later).
   */
  stopIdle(): Promise<boolean> {
    // Ended, or ending (a client or a write coming meanwhile starts it again, and says so: onWake).
    if (this.#thread === "stopped" || this.#thread === "stopping") return Promise.resolve(true);
    if (this.#closing !== null || this.#thread !== "running" || this.#pending.size > 0 || this.#outbox.length > 0
      || this.#checkpointWaiters.length > 0 || this.#maintenance.size > 0 || this.#held || this.#deferred.length > 0
      || this.#feedListener !== null) {
      return Promise.resolve(false);
    }
    return new Promise((resolve) => {
      this.#stopAnswer = resolve;
      this.#workerReady = false;
      this.#setThread("stopping");
      this.#worker.postMessage({ type: "stopIdle" } satisfies ToWriter);
    });
  }

  write(op: WriteOpName, params: unknown, deadline: number, key: string | null): Promise<unknown> {
    if (this.#closing !== null) return Promise.reject(new SessionDBError("CLOSED", "the daemon is shutting down"));
    this.wake();
    const seq = ++this.#seq;
    return new Promise((resolve, reject) => {
      const job = { seq, op, params, deadline, key };
      this.#pending.set(seq, { resolve, reject, job });
      if (this.#outbox.length === 0) setImmediate(() => this.#flush());
      this.#outbox.push(job);
    });
  }

  /**
   * One message per turn of the event loop, however many requests arrived in it. Only to a thread
   * that is ready: one that fails to start never takes a write with it.
   */
  #flush(): void {
    if (!this.#workerReady) return;
    const jobs = this.#outbox;
    this.#outbox = [];
    if (jobs.length > 0) this.#send({ type: "writes", jobs });
  }

  /** The checkpoint's result; rejects when it failed. */
  checkpoint(mode: "PASSIVE" | "TRUNCATE"): Promise<CheckpointResult> {
    return new Promise((resolve, reject) => {
      this.#checkpointWaiters.push({ resolve: (r) => resolve(r as CheckpointResult), reject });
      this.#send({ type: "checkpoint", mode });
    });
  }

  /**
   * Runs a maintenance task on the writer thread, between its batches (writer-messages.ts). Its
   * result; rejects with the task's error, or INTERNAL when the thread died meanwhile.
   */
  maintain(task: MaintenanceTask): Promise<unknown> {
    if (this.#closing !== null) return Promise.reject(new SessionDBError("CLOSED", "the daemon is shutting down"));
    const id = ++this.#maintenanceSeq;
    return new Promise((resolve, reject) => {
      this.#maintenance.set(id, { resolve, reject });
      this.#send({ type: "maintain", id, task });
    });
  }

  /** Holds writes (they queue) while on, so the WAL stops growing until a TRUNCATE checkpoint. */
  hold(on: boolean): void {
    this.#held = on;
    this.#send({ type: "hold", on });
  }

  /** Test hook: makes the writer thread throw at `at` (only when fault injection is on). */
  crash(at: WriterCrashPoint): void {
    this.#send({ type: "crash", at });
  }

  /** Test hook: caps the database at `pages` pages, a full disk for SQLite; null lifts the cap. */
  maxPageCount(pages: number | null): void {
    this.#pageCap = pages;
    this.#send({ type: "maxPageCount", pages });
  }

  /**
   * Turns the writer's change feed on: `listener` gets each commit's events in commit order (the
   * daemon's batches with their outcomes, other processes' commits within 50 ms). Resolves with
   * the cursor from which every message committed is in the events. If the thread dies, the new
   * one's feed starts again and `listener` gets a `resync` from its cursor.
   */
  startFeed(listener: (events: FeedEvent[]) => void): Promise<number> {
    this.#feedListener = listener;
    return new Promise((resolve, reject) => {
      this.#feedStart = { resolve: (cursor) => resolve(cursor as number), reject };
      this.#send({ type: "feed", on: true });
    });
  }

  /** Turns the feed off: no one watches. */
  stopFeed(): void {
    this.#feedListener = null;
    this.#feedStart?.reject(new SessionDBError("UNAVAILABLE", "the feed was stopped"));
    this.#feedStart = null;
    this.#send({ type: "feed", on: false });
  }

  histograms(): ReturnType<CommitHistograms["snapshot"]> {
    return this.#histograms.snapshot();
  }

  stats(): WriterStats {
    return {
      queueDepth: this.#pending.size,
      batches: this.#batches,
      writes: this.#writes,
      meanBatchSize: this.#batches === 0 ? 0 : this.#writes / this.#batches,
      maxBatchSize: this.#maxBatch,
      ...commitFigures(this.#commitMs, this.#lockMs),
      checkpoints: { ...this.#checkpoints },
      restarts: this.#restarts,
      thread: this.#thread,
      idleStops: this.#idleStops,
    };
  }

  /** Lets every queued write finish, checkpoints (TRUNCATE) and stops the thread (at once when it was stopped idle). */
  close(): Promise<void> {
    this.#closing ??= this.#closeThread();
    return this.#closing;
  }

  async #closeThread(): Promise<void> {
    // A stop under way ends first (writes queued meanwhile start a thread again, to run on); a
    // thread starting is ready first, so the close comes after the writes it is handed.
    while (this.#thread === "stopping" || this.#thread === "starting") {
      await new Promise<void>((resolve) => this.#stateWaiters.push(resolve));
    }
    if (this.#thread === "stopped") return;
    await new Promise<void>((resolve) => {
      this.#worker.once("exit", () => resolve());
      this.#worker.postMessage({ type: "close" } satisfies ToWriter);
    });
  }

  #setThread(state: WriterThreadState): void {
    this.#thread = state;
    for (const waiter of this.#stateWaiters.splice(0)) waiter();
  }

  /** To the thread, or (stopping or stopped) to the next one, which this starts. */
  #send(message: ToWriter): void {
    if (this.#thread === "stopping" || this.#thread === "stopped") {
      this.#deferred.push(message);
      this.wake();
      return;
    }
    this.#worker.postMessage(message);
  }

  /** After an idle stop: a thread again, retried while it cannot start (the requests wait). */
  async #startAgain(): Promise<void> {
    this.#setThread("starting");
    if (this.#pageCap !== null) this.#deferred.unshift({ type: "maxPageCount", pages: this.#pageCap });
    this.onWake?.();
    for (;;) {
      try {
        await this.#spawn();
        return;
      } catch (err) {
        this.#log(`starting the writer thread again failed: ${(err as Error).message}; retrying`);
        await new Promise((r) => setTimeout(r, 500));
        if (this.#closing !== null) {
          this.#failQueued("the daemon is shutting down");
          this.#setThread("stopped");
          return;
        }
      }
    }
  }

  /** Writes, checkpoints and maintenance that no thread will run (the daemon is closing and none can start). */
  #failQueued(why: string): void {
    for (const [seq, p] of this.#pending) {
      this.#pending.delete(seq);
      p.reject(new SessionDBError("CLOSED", why));
    }
    this.#outbox = [];
    this.#deferred = [];
    for (const waiter of this.#checkpointWaiters.splice(0)) waiter.reject(new SessionDBError("CLOSED", why));
    for (const waiter of this.#maintenance.values()) waiter.reject(new SessionDBError("CLOSED", why));
    this.#maintenance.clear();
  }

  /**
   * Starts a thread; resolves once it is ready, rejects if it ends before. Whether it was ready is
   * decided at its "exit", never at its "error": the error comes on another port than "ready" and
   * can be heard first even when the thread died after saying it (then taken for a failed start,
   * it was started again beside the restart its exit set off: two writer threads).
   */
  #spawn(): Promise<void> {
    return new Promise((resolve, reject) => {
      const worker = new Worker(WRITER_URL, { workerData: this.#config });
      this.#worker = worker;
      this.#workerReady = false;
      if (this.#thread !== "starting") this.#setThread("starting");
      let ready = false;
      let died: Error | null = null;
      worker.on("message", (message: FromWriter) => {
        if (message.type === "ready") {
          ready = true;
          this.newerVersion = message.newerVersion;
          this.#running();
          resolve();
        } else if (message.type === "stayed") {
          this.#running();
          this.#stopAnswer?.(false);
          this.#stopAnswer = null;
        } else if (message.type === "failed") {
          reject(fromWireError(message.error));
        } else {
          this.#onMessage(message);
        }
      });
      worker.on("error", (err) => {
        died = err;
      });
      // Node delivers what the thread posted before "exit": `ready` is final here.
      worker.on("exit", () => {
        if (!ready) {
          reject(new SessionDBError("INTERNAL", `the writer thread failed to start: ${died?.message ?? "it exited before it was ready"}`));
          return;
        }
        if (died !== null) this.#log(`the writer thread died: ${died.message}`);
        if (this.#thread === "stopping") {
          this.#stoppedIdle();
          return;
        }
        if (this.#closing === null) void this.#restart();
        else this.#setThread("stopped");
      });
    });
  }

  /** The thread is ready (or stayed when asked to stop): what waited for it is sent. */
  #running(): void {
    this.#workerReady = true;
    this.#setThread("running");
    for (const message of this.#deferred.splice(0)) this.#worker.postMessage(message);
    this.#flush();
  }

  /** The thread ended after a `stopIdle` (checkpointed, the file closed). */
  #stoppedIdle(): void {
    this.#idleStops++;
    this.#setThread("stopped");
    this.#stopAnswer?.(true);
    this.#stopAnswer = null;
    // Asked for meanwhile: started again at once (writes in the outbox, a checkpoint, a client).
    const wanted = this.#wakeAfterStop || this.#outbox.length > 0 || this.#deferred.length > 0;
    this.#wakeAfterStop = false;
    if (wanted) {
      if (this.#closing === null) void this.#startAgain();
      else if (this.#outbox.length > 0) void this.#startAgain(); // queued writes still run before the close
      else this.#failQueued("the daemon is shutting down");
    }
  }

  /**
   * Runs once the dead thread's last messages were handled (Node delivers them before "exit"), so
   * what is still pending got no outcome from it.
   */
  async #restart(): Promise<void> {
    this.#restarts++;
    const lost = this.#pending;
    this.#pending = new Map();
    const [first = 0, last = 0] = this.#committing;
    this.#committing.fill(0);
    // Sent again to the new thread, in their order and under fresh seqs (a batch is a run of
    // consecutive seqs): writes still in the outbox, which never reached the dead thread, and
    // keyed writes it had taken, committed or not: a committed one's key answers its first result.
    const again: PendingWrite[] = [];
    for (const [seq, p] of lost) {
      if (p.job.key !== null) again.push(p);
      else if (seq >= first && seq <= last) {
        p.reject(new SessionDBError("OUTCOME_UNKNOWN", "the writer thread died while committing this write, before it could answer: it may or may not have been applied; read before retrying"));
      } else if (!this.#outbox.includes(p.job)) {
        p.reject(new SessionDBError("INTERNAL", "the writer thread died before this write was committed; it was not applied"));
      } else again.push(p);
    }
    again.sort((a, b) => a.job.seq - b.job.seq);
    this.#outbox = again.map((p) => {
      const job = { ...p.job, seq: ++this.#seq };
      this.#pending.set(job.seq, { ...p, job });
      return job;
    });
    for (const waiter of this.#maintenance.values()) {
      waiter.reject(new SessionDBError("INTERNAL", "the writer thread died during the maintenance; it did not finish"));
    }
    this.#maintenance.clear();
    for (const waiter of this.#checkpointWaiters.splice(0)) {
      waiter.reject(new SessionDBError("INTERNAL", "the writer thread died before the checkpoint ran"));
    }
    // The test hook's page cap holds for the new thread too.
    if (this.#pageCap !== null) this.#deferred.unshift({ type: "maxPageCount", pages: this.#pageCap });
    for (;;) {
      try {
        await this.#spawn();
        // The feed goes on in the new thread; what the dead one saw last is not known (a resync).
        if (this.#feedListener !== null) this.#send({ type: "feed", on: true });
        return;
      } catch (err) {
        this.#log(`restarting the writer thread failed: ${(err as Error).message}; retrying`);
        await new Promise((r) => setTimeout(r, 500));
        if (this.#closing !== null) {
          this.#setThread("stopped");
          return;
        }
      }
    }
  }

  #settle(outcomes: WriteOutcome[]): void {
    for (const o of outcomes) {
      const p = this.#pending.get(o.seq);
      if (p === undefined) continue;
      this.#pending.delete(o.seq);
      if (o.ok) p.resolve(o.result);
      else p.reject(fromWireError(o.error));
    }
  }

  #onMessage(message: Exclude<FromWriter, { type: "ready" | "failed" | "stayed" }>): void {
    switch (message.type) {
      case "batch":
        this.#batches++;
        this.#writes += message.outcomes.length;
        this.#maxBatch = Math.max(this.#maxBatch, message.outcomes.length);
        this.#commitMs.add(message.commitMs);
        this.#histograms.record(message.outcomes.length, message.commitMs);
        this.#lockMs.add(message.lockMs);
        this.#settle(message.outcomes);
        if (message.feed !== undefined) this.#feedListener?.(message.feed);
        break;
      case "feed":
        this.#feedListener?.(message.events);
        break;
      case "feedStarted": {
        const start = this.#feedStart;
        this.#feedStart = null;
        if (start !== null) start.resolve(message.cursor);
        else this.#feedListener?.([{ event: { type: "resync", afterMessageId: message.cursor }, source: null }]);
        break;
      }
      case "feedFailed": {
        const err = fromWireError(message.error);
        this.#log(`watch: the writer could not start the change feed: ${err.message}`);
        this.#feedStart?.reject(err);
        this.#feedStart = null;
        if (this.#feedListener === null) this.#send({ type: "feed", on: false });
        break;
      }
      case "unapplied":
        this.#settle(message.outcomes);
        break;
      case "checkpointed": {
        const r = message.result;
        if (r.mode === "PASSIVE") this.#checkpoints.passive++;
        else this.#checkpoints.truncate++;
        this.#checkpoints.lastLogFrames = r.log;
        if (message.requested) this.#checkpointWaiters.shift()?.resolve(r);
        break;
      }
      case "checkpointFailed": {
        const err = fromWireError(message.error);
        if (message.requested) this.#checkpointWaiters.shift()?.reject(err);
        // Another connection holding what an idle checkpoint needs is routine: the next one catches up.
        else if (err.code !== "BUSY") this.#log(`checkpoint failed: ${err.message}`);
        break;
      }
      case "walLost":
        this.#onWalLost(message.message);
        break;
      case "log":
        this.#log(message.line);
        break;
      case "maintained": {
        const waiter = this.#maintenance.get(message.id);
        this.#maintenance.delete(message.id);
        if (message.outcome.ok) waiter?.resolve(message.outcome.result);
        else waiter?.reject(fromWireError(message.outcome.error));
        break;
      }
      case "closed":
        break;
    }
  }
}

import { Worker } from "node:worker_threads";
import { SessionDBError, fromWireError } from "../errors.js";
import type { WriteOpName } from "../operation-catalogue.js";
import type { WriterStats } from "../protocol/control.js";
import type {
  CheckpointResult,
  FromWriter,
  ToWriter,
  WriteJob,
  WriteOutcome,
  WriterConfig,
} from "./writer-messages.js";

const WRITER_URL = new URL("../../workers/writer.js", import.meta.url);

interface Pending {
  resolve(result: unknown): void;
  reject(err: SessionDBError): void;
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
 * The main thread's side of the writer thread: hands it write requests, matches the outcomes
 * that come back after each COMMIT, and restarts the thread if it dies (its in-flight requests
 * fail with INTERNAL: they were not acknowledged, so nothing acknowledged is lost).
 */
export class WriterClient {
  readonly #config: WriterConfig;
  #worker!: Worker;
  #pending = new Map<number, Pending>();
  #outbox: WriteJob[] = [];
  #checkpointWaiters: Pending[] = [];
  #seq = 0;
  #closing: Promise<void> | null = null;
  #batches = 0;
  #writes = 0;
  #maxBatch = 0;
  #commitMs = new Window();
  #lockMs = new Window();
  #checkpoints = { passive: 0, truncate: 0, lastLogFrames: 0 };
  #restarts = 0;
  /** The file's schema version when a newer Hermes made it (the file is served read-only), else null. */
  newerVersion: number | null = null;

  readonly #log: (line: string) => void;

  private constructor(config: WriterConfig, log: (line: string) => void) {
    this.#config = config;
    this.#log = log;
  }

  /** Starts the writer thread; what it has to say goes to `log` (the daemon's). */
  static async start(config: WriterConfig, log: (line: string) => void): Promise<WriterClient> {
    const client = new WriterClient(config, log);
    await client.#spawn();
    return client;
  }

  get queueDepth(): number {
    return this.#pending.size;
  }

  write(op: WriteOpName, params: unknown, deadline: number): Promise<unknown> {
    if (this.#closing !== null) return Promise.reject(new SessionDBError("CLOSED", "the daemon is shutting down"));
    const seq = ++this.#seq;
    return new Promise((resolve, reject) => {
      this.#pending.set(seq, { resolve, reject });
      if (this.#outbox.length === 0) setImmediate(() => this.#flush());
      this.#outbox.push({ seq, op, params, deadline });
    });
  }

  /** One message per turn of the event loop, however many requests arrived in it. */
  #flush(): void {
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

  /** Holds writes (they queue) while on, so the WAL stops growing until a TRUNCATE checkpoint. */
  hold(on: boolean): void {
    this.#send({ type: "hold", on });
  }

  /** Test hook: makes the writer thread throw (only when fault injection is on). */
  crash(): void {
    this.#send({ type: "crash" });
  }

  /** Test hook: caps the database at `pages` pages, a full disk for SQLite; null lifts the cap. */
  maxPageCount(pages: number | null): void {
    this.#send({ type: "maxPageCount", pages });
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
    };
  }

  /** Lets every queued write finish, checkpoints (TRUNCATE) and stops the thread. */
  close(): Promise<void> {
    this.#closing ??= new Promise<void>((resolve) => {
      this.#worker.once("exit", () => resolve());
      this.#send({ type: "close" });
    });
    return this.#closing;
  }

  #send(message: ToWriter): void {
    this.#worker.postMessage(message);
  }

  #spawn(): Promise<void> {
    return new Promise((resolve, reject) => {
      const worker = new Worker(WRITER_URL, { workerData: this.#config });
      this.#worker = worker;
      let ready = false;
      worker.on("message", (message: FromWriter) => {
        if (message.type === "ready") {
          ready = true;
          this.newerVersion = message.newerVersion;
          resolve();
        } else if (message.type === "failed") {
          reject(fromWireError(message.error));
        } else {
          this.#onMessage(message);
        }
      });
      worker.on("error", (err) => {
        if (!ready) reject(new SessionDBError("INTERNAL", `the writer thread failed to start: ${err.message}`));
        else this.#log(`the writer thread died: ${err.message}`);
      });
      worker.on("exit", () => {
        if (!ready) {
          reject(new SessionDBError("INTERNAL", "the writer thread exited before it was ready"));
          return;
        }
        if (this.#closing === null) void this.#restart();
      });
    });
  }

  async #restart(): Promise<void> {
    this.#restarts++;
    const lost = this.#pending;
    this.#pending = new Map();
    // Writes still in the outbox never reached the dead thread: they go to the new one.
    for (const job of this.#outbox) {
      const waiting = lost.get(job.seq);
      if (waiting === undefined) continue;
      lost.delete(job.seq);
      this.#pending.set(job.seq, waiting);
    }
    for (const p of lost.values()) {
      p.reject(new SessionDBError("INTERNAL", "the writer thread died before this write was committed; it was not applied"));
    }
    for (const waiter of this.#checkpointWaiters.splice(0)) {
      waiter.reject(new SessionDBError("INTERNAL", "the writer thread died before the checkpoint ran"));
    }
    for (;;) {
      try {
        await this.#spawn();
        return;
      } catch (err) {
        this.#log(`restarting the writer thread failed: ${(err as Error).message}; retrying`);
        await new Promise((r) => setTimeout(r, 500));
        if (this.#closing !== null) return;
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

  #onMessage(message: Exclude<FromWriter, { type: "ready" | "failed" }>): void {
    switch (message.type) {
      case "batch":
        this.#batches++;
        this.#writes += message.outcomes.length;
        this.#maxBatch = Math.max(this.#maxBatch, message.outcomes.length);
        this.#commitMs.add(message.commitMs);
        this.#lockMs.add(message.lockMs);
        this.#settle(message.outcomes);
        break;
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
      case "log":
        this.#log(message.line);
        break;
      case "closed":
        break;
    }
  }
}

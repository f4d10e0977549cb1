import { Piscina } from "piscina";
import { SessionDBError, fromWireError } from "../errors.js";
import type { OpName } from "../operation-catalogue.js";
import type { ReaderStats } from "../protocol/control.js";
import type { ReadOutcome, ReaderConfig, ReadTask } from "./reader-messages.js";

const READER_URL = new URL("../../workers/reader.js", import.meta.url);
/**
 * V8's young generation per reader thread, in MB. Left at its default, each thread's heap kept
 * growing for tens of thousands of searches (RSS +80 MiB with two threads) before it levelled
 * off; capped, RSS stays flat and searches are as fast.
 */
const READER_YOUNG_GENERATION_MB = 8;

/**
 * The reader threads (piscina): a fixed number, each with its own read-only connection. Reads can
 * be paused briefly so a TRUNCATE checkpoint finds no reader holding the WAL.
 */
export class ReaderPool {
  readonly #pool: Piscina<ReadTask, ReadOutcome>;
  readonly #threads: number;
  #inFlight = 0;
  #crashes = 0;
  #gate: Promise<void> | null = null;
  #openGate: (() => void) | null = null;
  #drained: Array<() => void> = [];

  /** What the threads have to say goes to `log` (the daemon's). */
  constructor(threads: number, config: ReaderConfig, log: (line: string) => void) {
    this.#threads = threads;
    this.#pool = new Piscina<ReadTask, ReadOutcome>({
      filename: READER_URL.href,
      minThreads: threads,
      maxThreads: threads,
      idleTimeout: Number.POSITIVE_INFINITY,
      workerData: config,
      resourceLimits: { maxYoungGenerationSizeMb: READER_YOUNG_GENERATION_MB },
    });
    // A thread failing outside a task (its connection could not be opened) is reported as an
    // 'error' event: unheard, it would take the whole daemon down.
    this.#pool.on("error", (err: Error) => log(`a reader thread failed: ${err.message}`));
  }

  async run(op: OpName, params: unknown, cursor?: unknown): Promise<unknown> {
    while (this.#gate !== null) await this.#gate;
    this.#inFlight++;
    const crash = this.#crashes > 0;
    if (crash) this.#crashes--;
    let outcome: ReadOutcome;
    try {
      outcome = await this.#pool.run({ op, params, cursor, ...(crash ? { crash } : {}) });
    } catch (err) {
      throw new SessionDBError("INTERNAL", `a reader thread failed: ${(err as Error).message}`);
    } finally {
      this.#inFlight--;
      if (this.#inFlight === 0) for (const done of this.#drained.splice(0)) done();
    }
    if (!outcome.ok) throw fromWireError(outcome.error);
    return outcome.result;
  }

  /** Fault injection: the threads serving the next `reads` reads exit mid-task; the pool replaces them. */
  crashDuringNextReads(reads: number): void {
    this.#crashes += reads;
  }

  /** Holds new reads and resolves once the running ones are done (or after `maxWaitMs`). */
  async pause(maxWaitMs: number): Promise<void> {
    if (this.#gate === null) this.#gate = new Promise((resolve) => (this.#openGate = resolve));
    if (this.#inFlight === 0) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, maxWaitMs);
      this.#drained.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  resume(): void {
    const open = this.#openGate;
    this.#gate = null;
    this.#openGate = null;
    open?.();
  }

  stats(): ReaderStats {
    return {
      threads: this.#threads,
      utilization: this.#pool.utilization,
      queued: this.#pool.queueSize,
      inFlight: this.#inFlight,
      completed: this.#pool.completed,
      paused: this.#gate !== null,
    };
  }

  async close(): Promise<void> {
    this.resume();
    await this.#pool.close();
  }
}

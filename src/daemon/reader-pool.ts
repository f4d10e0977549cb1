import type { Worker } from "node:worker_threads";
import { Piscina } from "piscina";
import { SessionDBError, fromWireError } from "../errors.js";
import type { ReaderStats } from "../protocol/control.js";
import type { ReadOutcome, ReaderConfig, ReaderOp, ReadTask } from "./reader-messages.js";
import { MAX_TIMER_MS } from "./idle-exit.js";
import { OPERATIONS, type EngineOpName } from "../operation-catalogue.js";
import { EncodedResult } from "../protocol/frame-codec.js";

const READER_URL = new URL("../../workers/reader.js", import.meta.url);
/**
 * V8's young generation per reader thread, in MB. Left at its default, each thread's heap kept
 * growing for tens of thousands of searches (RSS +80 MiB with two threads) before it levelled
 * off; capped, RSS stays flat and searches are as fast.
 */
const READER_YOUNG_GENERATION_MB = 8;

/**
 * Reads whose cost grows with the data (the catalogue's slow operations, and the integrity
 * check): they run on at most `threads` threads, so the one thread beyond those is always there
 * for the point reads.
 */
function isSlow(op: ReaderOp): boolean {
  return op === "checkIntegrity" || (op !== "watchReplay" && OPERATIONS[op].slow);
}

/** Who asked for a read: the daemon's connection to that client. */
export interface ReadRequester {
  /** Aborted when the client went away: its reads are dropped, or stopped if running. */
  readonly gone: AbortSignal;
  /**
   * The client shut down its side. It may still read its replies (a half-close), or be gone
   * without the daemon knowing yet (that shows only when a reply is written): its reads wait
   * until no other client's read does.
   */
  readonly ended: boolean;
}

interface QueuedRead {
  task: ReadTask;
  requester: ReadRequester | undefined;
  resolve(result: unknown): void;
  reject(err: SessionDBError): void;
}

/**
 * The reader threads (piscina), each with its own read-only connection, fed from two queues of
 * our own: point reads are served first and have a thread of their own, so one client's slow
 * searches cannot starve another's `getSession`. A read is not started past its deadline, nor
 * for a client that went away; a running read stopped by either (its deadline, or its client
 * leaving) ends its thread, which the pool replaces. Reads can be paused briefly so a TRUNCATE
 * checkpoint finds no reader holding the WAL.
 *
 * No thread runs until the first read, and each one ends once it has been idle `idleMs`: an idle
 * daemon holds no reader thread (each had a V8 heap of its own, about 12 MB of RSS), and the
 * next read starts one again (a few tens of ms, see bench/idle-footprint.ts).
 */
export class ReaderPool {
  readonly #pool: Piscina<ReadTask, ReadOutcome>;
  readonly #threads: number;
  readonly #cheap: QueuedRead[] = [];
  readonly #slow: QueuedRead[] = [];
  /** Reads of clients that shut down their side, served last. */
  readonly #ended: QueuedRead[] = [];
  #running = 0;
  #runningSlow = 0;
  /** `checkIntegrity` reads running: each holds one snapshot for the whole file's check. */
  #checking = 0;
  #crashes = 0;
  #paused = false;
  #drained: Array<() => void> = [];
  /**
   * Threads that may be ending a stopped read, until they exit. Piscina ends such a thread
   * without waiting for it, and the thread goes on until its query returns (seconds, for a big
   * search): its connection to the file stays open that long.
   */
  readonly #leaving = new Set<Worker>();

  /** Threads end after `idleMs` without a read. What the threads have to say goes to `log` (the daemon's). */
  constructor(threads: number, idleMs: number, config: ReaderConfig, log: (line: string) => void) {
    this.#threads = threads;
    this.#pool = new Piscina<ReadTask, ReadOutcome>({
      filename: READER_URL.href,
      // piscina tries require() before import(); Node 20's require() of an ES module aborts the
      // whole process when the thread is ended while loading (an assertion in
      // CreateRequiredModuleFacade, seen at shutdown). Without require(esm) it imports it.
      execArgv: ["--no-experimental-require-module"],
      // Started on demand, up to `threads + 1`, and ended when idle: none at all once quiet.
      minThreads: 0,
      maxThreads: threads + 1,
      // Past a timer's longest delay (Node would fire at once) they stay.
      idleTimeout: idleMs > MAX_TIMER_MS ? Number.POSITIVE_INFINITY : idleMs,
      workerData: config,
      resourceLimits: { maxYoungGenerationSizeMb: READER_YOUNG_GENERATION_MB },
    });
    // A thread failing outside a task (its connection could not be opened) is reported as an
    // 'error' event: unheard, it would take the whole daemon down.
    this.#pool.on("error", (err: Error) => log(`a reader thread failed: ${err.message}`));
  }

  /**
   * Runs one read. Past `deadline` (ms since the epoch) it is answered TIMEOUT, started or not;
   * when its requester goes away it is answered CLOSED.
   */
  run(op: ReaderOp, params: unknown, deadline: number, cursor?: unknown, requester?: ReadRequester): Promise<unknown> {
    return this.#queue({ op, params, cursor, deadline }, requester);
  }

  /** A read whose result goes to `requester` as it is: it resolves with the result encoded by the thread (an `EncodedResult`). */
  reply(op: EngineOpName, params: unknown, deadline: number, requester: ReadRequester): Promise<unknown> {
    return this.#queue({ op, params, deadline, encode: true }, requester);
  }

  #queue(task: ReadTask, requester: ReadRequester | undefined): Promise<unknown> {
    if (this.#crashes > 0) {
      this.#crashes--;
      task.crash = true;
    }
    return new Promise((resolve, reject) => {
      const read: QueuedRead = { task, requester, resolve, reject };
      (isSlow(task.op) ? this.#slow : this.#cheap).push(read);
      this.#pump();
    });
  }

  /** Starts queued reads while threads are free: point reads first, slow ones on at most `threads` threads. */
  #pump(): void {
    while (!this.#paused && this.#running <= this.#threads) {
      const read = this.#next();
      if (read === undefined) return;
      if (read.requester?.gone.aborted) read.reject(gone(read.task));
      else if (Date.now() >= read.task.deadline) read.reject(expired(read.task));
      else this.#start(read);
    }
  }

  /** The next read to start: live clients' point reads, their slow reads, then those of clients that ended. */
  #next(): QueuedRead | undefined {
    const slowAllowed = this.#runningSlow < this.#threads;
    for (;;) {
      const read = this.#cheap.shift() ?? (slowAllowed ? this.#slow.shift() : undefined);
      if (read === undefined) break;
      if (read.requester?.ended === true && !read.requester.gone.aborted) this.#ended.push(read);
      else return read;
    }
    const head = this.#ended[0];
    return head !== undefined && (slowAllowed || !isSlow(head.task.op)) ? this.#ended.shift() : undefined;
  }

  #start(read: QueuedRead): void {
    const slow = isSlow(read.task.op);
    const check = read.task.op === "checkIntegrity";
    this.#running++;
    if (slow) this.#runningSlow++;
    if (check) this.#checking++;
    const startedAt = Date.now();
    const stop = new AbortController();
    let why: SessionDBError | null = null;
    let stopTimer: NodeJS.Timeout | undefined;
    const stopThread = () => {
      this.#watchLeaving();
      stop.abort();
    };
    // The caller hears at once; the thread is stopped no sooner than STOP_AFTER_MS into the read.
    const abort = (err: SessionDBError) => {
      if (why !== null) return;
      why = err;
      read.reject(err);
      const wait = startedAt + STOP_AFTER_MS - Date.now();
      if (wait > 0) stopTimer = setTimeout(stopThread, wait);
      else stopThread();
    };
    const timer = setTimeout(() => abort(expired(read.task)), Math.max(0, read.task.deadline - Date.now()));
    const onGone = () => abort(gone(read.task));
    read.requester?.gone.addEventListener("abort", onGone, { once: true });
    this.#pool.run(read.task, { signal: stop.signal }).then(
      (outcome) => {
        if (why !== null) return;
        if (!outcome.ok) read.reject(fromWireError(outcome.error));
        else read.resolve("encoded" in outcome ? new EncodedResult(outcome.encoded) : outcome.result);
      },
      (err: unknown) => read.reject(why ?? new SessionDBError("INTERNAL", `a reader thread failed: ${(err as Error).message}`)),
    ).finally(() => {
      clearTimeout(timer);
      clearTimeout(stopTimer);
      read.requester?.gone.removeEventListener("abort", onGone);
      this.#running--;
      if (slow) this.#runningSlow--;
      if (check) this.#checking--;
      if (this.#running === 0) for (const done of this.#drained.splice(0)) done();
      this.#pump();
    });
  }

  /** Which thread runs a read is piscina's to know: every live thread is watched until it exits. */
  #watchLeaving(): void {
    for (const thread of this.#pool.threads) {
      if (this.#leaving.has(thread)) continue;
      this.#leaving.add(thread);
      thread.once("exit", () => this.#leaving.delete(thread));
    }
  }

  /** Fault injection: the threads serving the next `reads` reads exit mid-task; the pool replaces them. */
  crashDuringNextReads(reads: number): void {
    this.#crashes += reads;
  }

  /**
   * True while a `check` runs: its snapshot keeps a TRUNCATE checkpoint from emptying the WAL
   * until it ends, so holding the writes for one would only stall them (the WAL guard waits).
   */
  get pinned(): boolean {
    return this.#checking > 0;
  }

  /** Holds new reads and resolves once the running ones are done (or after `maxWaitMs`). */
  async pause(maxWaitMs: number): Promise<void> {
    this.#paused = true;
    if (this.#running === 0) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, maxWaitMs);
      this.#drained.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  resume(): void {
    this.#paused = false;
    this.#pump();
  }

  stats(): ReaderStats {
    return {
      threads: this.#threads,
      live: this.#pool.threads.length,
      utilization: this.#pool.utilization,
      queued: this.#cheap.length + this.#slow.length + this.#ended.length,
      inFlight: this.#running,
      completed: this.#pool.completed,
      paused: this.#paused,
    };
  }

  /**
   * Lets the queued reads run (or expire), then stops the threads; resolves once every thread has
   * exited, those ending a stopped read too, so no connection to the file outlives the pool.
   */
  async close(): Promise<void> {
    this.resume();
    while (this.#running + this.#cheap.length + this.#slow.length + this.#ended.length > 0) await new Promise((r) => setTimeout(r, 10));
    await this.#pool.close();
    await Promise.all([...this.#leaving].map((thread) => new Promise((resolve) => thread.once("exit", resolve))));
  }
}

/**
 * A running read is stopped (its thread terminated) no sooner than this long after it started.
 * A statement that fails reports its error early (a query FTS5 cannot parse fails at its first
 * step), and a thread terminated while better-sqlite3 builds that error aborts the whole process
 * (V8's `ToLocalChecked` on an empty handle): a client that sent a bad search and hung up at once
 * took the daemon down. Its answer does not wait: TIMEOUT (or the drop) is sent at once.
 */
const STOP_AFTER_MS = 1000;

function expired(task: ReadTask): SessionDBError {
  return new SessionDBError("TIMEOUT", `${task.op} did not finish before its deadline; it was stopped`);
}

function gone(task: ReadTask): SessionDBError {
  return new SessionDBError("CLOSED", `${task.op} was dropped: the client went away`);
}

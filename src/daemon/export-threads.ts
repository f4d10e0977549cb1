/**
 * The SQLite daemon's streamed reads on one snapshot each (issue 23 item 3): every `exportAll`
 * gets a thread of its own (workers/exporter.ts) holding one read transaction from its first page
 * to its last. At most `max` run at once (the others wait their turn, within their deadline), so
 * exports cannot crowd the machine with threads. The WAL guard ends them when the WAL passes its
 * limit: a snapshot holds back every checkpoint behind it.
 */
import { Worker } from "node:worker_threads";
import { SessionDBError, fromWireError } from "../errors.js";
import type { Page } from "../operations/page.js";
import type { StreamOpName } from "../operation-catalogue.js";
import type { DaemonSnapshots, ReadSnapshot, SnapshotStats } from "./daemon-engine.js";
import type { ExporterConfig, FromExporter, ToExporter } from "./export-messages.js";
import type { ReadRequester } from "./reader-pool.js";

const EXPORTER_URL = new URL("../../workers/exporter.js", import.meta.url);
/** As the reader threads' (reader-pool.ts): a young generation left at its default keeps growing. */
const EXPORTER_YOUNG_GENERATION_MB = 8;
/**
 * A thread whose page outlived its deadline is terminated no sooner than this long after the page
 * began: terminating one while better-sqlite3 builds an error aborts the process (reader-pool.ts).
 */
const STOP_AFTER_MS = 1000;

export class ExportThreads implements DaemonSnapshots {
  readonly #path: string;
  readonly #busyTimeoutMs: number;
  readonly #max: number;
  readonly #running = new Set<ExportThread>();
  readonly #waiting: Array<() => void> = [];
  #pagesRead = 0;
  #closed = false;

  constructor(path: string, busyTimeoutMs: number, max: number) {
    this.#path = path;
    this.#busyTimeoutMs = busyTimeoutMs;
    this.#max = Math.max(1, max);
  }

  async open(op: StreamOpName, params: unknown, deadline: number, requester?: ReadRequester): Promise<ReadSnapshot> {
    await this.#turn(op, deadline, requester);
    const config: ExporterConfig = { path: this.#path, busyTimeoutMs: this.#busyTimeoutMs, op, params };
    const thread = new ExportThread(config, () => this.#pagesRead++);
    this.#running.add(thread);
    void thread.exited.then(() => {
      this.#running.delete(thread);
      this.#waiting.shift()?.();
    });
    try {
      await thread.ready(deadline);
    } catch (err) {
      void thread.close();
      throw err;
    }
    return thread;
  }

  /** Waits until fewer than `max` exports run (or fails past the deadline, or once closed). */
  async #turn(op: StreamOpName, deadline: number, requester?: ReadRequester): Promise<void> {
    while (this.#running.size >= this.#max) {
      if (this.#closed) throw shuttingDown();
      if (requester?.gone.aborted === true) throw new SessionDBError("CLOSED", `${op} was dropped: the client went away`);
      let wake!: () => void;
      const woken = new Promise<void>((resolve) => (wake = resolve));
      this.#waiting.push(wake);
      const timer = setTimeout(wake, Math.max(0, deadline - Date.now()));
      await woken;
      clearTimeout(timer);
      const index = this.#waiting.indexOf(wake);
      if (index >= 0) this.#waiting.splice(index, 1);
      if (Date.now() >= deadline && this.#running.size >= this.#max) {
        throw new SessionDBError("TIMEOUT", `${op} waited for an export thread past its deadline; it did not start`);
      }
    }
    if (this.#closed) throw shuttingDown();
  }

  /**
   * Ends every running export with `reason` (their clients get it instead of the next page).
   * Resolves once their threads have exited, or after `maxWaitMs`.
   */
  async endAll(reason: SessionDBError, maxWaitMs: number): Promise<void> {
    const exits = [...this.#running].map((thread) => {
      thread.end(reason);
      return thread.exited;
    });
    if (exits.length === 0) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.all(exits), new Promise((resolve) => (timer = setTimeout(resolve, maxWaitMs)))]);
    clearTimeout(timer);
  }

  get running(): number {
    return this.#running.size;
  }

  stats(): SnapshotStats {
    return { open: this.#running.size, pagesRead: this.#pagesRead };
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const wake of this.#waiting.splice(0)) wake();
    await this.endAll(shuttingDown(), Number.POSITIVE_INFINITY);
  }
}

interface Waiter {
  resolve(message: FromExporter): void;
  reject(err: SessionDBError): void;
  timer: NodeJS.Timeout;
}

/** One export's thread, asked for one page at a time. */
class ExportThread implements ReadSnapshot {
  readonly #worker: Worker;
  readonly #onPage: () => void;
  #waiter: Waiter | null = null;
  #ended: SessionDBError | null = null;
  #stopTimer: NodeJS.Timeout | undefined;
  /** Resolves once the thread has exited: its connection, and so its snapshot, are gone. */
  readonly exited: Promise<void>;

  constructor(config: ExporterConfig, onPage: () => void) {
    this.#onPage = onPage;
    this.#worker = new Worker(EXPORTER_URL, {
      workerData: config,
      resourceLimits: { maxYoungGenerationSizeMb: EXPORTER_YOUNG_GENERATION_MB },
    });
    this.#worker.on("message", (message: FromExporter) => this.#answer(message));
    let died: Error | null = null;
    this.#worker.on("error", (err) => (died = err));
    this.exited = new Promise((resolve) => {
      this.#worker.once("exit", () => {
        clearTimeout(this.#stopTimer);
        this.#fail(this.#ended ?? new SessionDBError("INTERNAL", `the export thread died: ${died?.message ?? "it exited"}`));
        resolve();
      });
    });
  }

  async ready(deadline: number): Promise<void> {
    await this.#ask(null, deadline);
  }

  async page(cursor: unknown, deadline: number): Promise<Page<unknown, unknown>> {
    const answer = await this.#ask({ type: "page", cursor }, deadline);
    if (answer.type !== "page") throw new SessionDBError("INTERNAL", `the export thread answered ${answer.type} to a page`);
    this.#onPage();
    return answer.page;
  }

  /** Ends the export: the pending page (if any) and every later one fail with `reason`. */
  end(reason: SessionDBError): void {
    if (this.#ended !== null) return;
    this.#ended = reason;
    this.#fail(reason);
    // The thread reads the message once its current page is done, then closes its connection.
    this.#worker.postMessage({ type: "close" } satisfies ToExporter);
  }

  close(): Promise<void> {
    this.end(new SessionDBError("CLOSED", "the export was closed"));
    return this.exited;
  }

  #ask(message: ToExporter | null, deadline: number): Promise<FromExporter> {
    if (this.#ended !== null) return Promise.reject(this.#ended);
    const startedAt = Date.now();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        const why = new SessionDBError("TIMEOUT", "exportAll did not produce its next page before its deadline; it was stopped");
        this.end(why);
        // A thread stuck in a long read is not waited for.
        this.#stopTimer = setTimeout(() => void this.#worker.terminate(), Math.max(0, startedAt + STOP_AFTER_MS - Date.now()));
      }, Math.max(0, deadline - startedAt));
      this.#waiter = { resolve, reject, timer };
      if (message !== null) this.#worker.postMessage(message);
    });
  }

  #answer(message: FromExporter): void {
    const waiter = this.#waiter;
    if (waiter === null) return;
    this.#waiter = null;
    clearTimeout(waiter.timer);
    if (message.type === "error") waiter.reject(fromWireError(message.error));
    else waiter.resolve(message);
  }

  #fail(err: SessionDBError): void {
    const waiter = this.#waiter;
    if (waiter === null) return;
    this.#waiter = null;
    clearTimeout(waiter.timer);
    waiter.reject(err);
  }
}

function shuttingDown(): SessionDBError {
  return new SessionDBError("UNAVAILABLE", "the daemon is shutting down; the export was ended");
}

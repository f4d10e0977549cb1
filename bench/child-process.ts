/**
 * The parent's side of a benchmark child (protocol in workers/protocol.ts): spawn it, wait until
 * it is set up, start many at the same instant, stop them, and read their reports.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { killOnInterrupt } from "./interrupt.js";

/** How long a child may take to get ready (spawning 64 Node processes on 2 cores is slow). */
const READY_LIMIT_MS = 120_000;

export class BenchChild<Report> {
  readonly #process: ChildProcess;
  readonly #exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  #stdout = "";
  #stderr = "";
  #onOutput: (() => void) | null = null;
  /** Set in the "close" (or spawn "error") handler itself, before `#onOutput` runs: a check made then must see it. */
  #closed = false;

  private constructor(command: string, args: readonly string[]) {
    this.#process = spawn(command, args, { stdio: ["pipe", "pipe", "pipe"] });
    killOnInterrupt(this.#process);
    this.#process.stdout!.setEncoding("utf8").on("data", (chunk: string) => {
      this.#stdout += chunk;
      this.#onOutput?.();
    });
    this.#process.stderr!.setEncoding("utf8").on("data", (chunk: string) => {
      this.#stderr += chunk;
    });
    // A child that already ended must not crash the parent with EPIPE.
    this.#process.stdin!.on("error", () => undefined);
    this.#exited = new Promise((resolve, reject) => {
      this.#process.once("error", (err) => {
        this.#closed = true;
        reject(err);
        this.#onOutput?.();
      });
      this.#process.once("close", (code, signal) => {
        this.#closed = true;
        resolve({ code, signal });
        this.#onOutput?.();
      });
    });
    // Awaited by `report()`; a spawn error before that is reported through `ready()`.
    this.#exited.catch(() => undefined);
  }

  /** A compiled Node script of bench/workers with its config as JSON. */
  static node<R>(script: string, config: unknown): BenchChild<R> {
    return new BenchChild<R>(process.execPath, [script, JSON.stringify(config)]);
  }

  static python<R>(script: string, config: unknown): BenchChild<R> {
    return new BenchChild<R>("python3", [script, JSON.stringify(config)]);
  }

  /** Resolves once the child printed `ready`; rejects if it exits or takes too long first. */
  ready(): Promise<void> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => finish(new Error(`a benchmark child was not ready within ${READY_LIMIT_MS} ms`)), READY_LIMIT_MS);
      const finish = (err?: Error) => {
        clearTimeout(timer);
        this.#onOutput = null;
        if (err) reject(err);
        else resolve();
      };
      const check = () => {
        if (this.#stdout.startsWith("ready\n") || this.#stdout.includes("\nready\n")) finish();
        else if (this.#closed) finish(new Error(`a benchmark child exited before it was ready:\n${this.#stderr}`));
      };
      this.#onOutput = check;
      check();
    });
  }

  go(): void {
    this.#process.stdin!.write("go\n");
  }

  /** Stops the child; `argument` goes with the signal (`stop <argument>`) for a child that needs it. */
  stop(argument?: string): void {
    this.#process.stdin!.write(argument === undefined ? "stop\n" : `stop ${argument}\n`);
  }

  get pid(): number | undefined {
    return this.#process.pid;
  }

  /** The child's report (its last stdout line), once it exited with status 0. */
  async report(): Promise<Report> {
    const { code, signal } = await this.#exited;
    if (code !== 0) throw new Error(`a benchmark child failed (${code ?? signal}):\n${this.#stderr}`);
    const lines = this.#stdout.trim().split("\n");
    return JSON.parse(lines[lines.length - 1] ?? "null") as Report;
  }

  /** Ends the child if it still runs (cleanup after a failure). */
  kill(): void {
    if (this.#process.exitCode === null && this.#process.signalCode === null) this.#process.kill("SIGKILL");
  }
}

/** Starts every child at the same instant: all are set up and waiting before the first `go`. */
export async function startTogether(children: ReadonlyArray<BenchChild<unknown>>): Promise<void> {
  await Promise.all(children.map((c) => c.ready()));
  for (const child of children) child.go();
}

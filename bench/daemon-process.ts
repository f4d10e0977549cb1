/**
 * A `sessiondb serve` child process: the daemon in its own process, as in production. Started
 * per run on that run's fresh file; asked for `stats`; stopped with SIGTERM.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { openSessionDB, type SessionDB } from "../src/index.js";
import type { DaemonStats } from "../src/protocol/control.js";
import { killOnInterrupt } from "./interrupt.js";
import { CLI_PATH } from "./paths.js";

const START_LIMIT_MS = 30_000;
const STOP_LIMIT_MS = 60_000;

export interface DaemonProcessOptions {
  db: string;
  socket: string;
  synchronous: "FULL" | "NORMAL";
  /** The daemon's default when null. */
  walLimitMb: number | null;
  /** Added to the environment (a runtime dir of its own, for a second "host" on one database). */
  env?: NodeJS.ProcessEnv;
}

export class DaemonProcess {
  readonly socket: string;
  readonly #process: ChildProcess;
  readonly #exited: Promise<number | null>;
  #log = "";
  #client: SessionDB | null = null;

  private constructor(options: DaemonProcessOptions) {
    this.socket = options.socket;
    const args = [CLI_PATH, "--db", options.db, "serve", "--socket", options.socket, "--synchronous", options.synchronous];
    if (options.walLimitMb !== null) args.push("--wal-limit-mb", String(options.walLimitMb));
    this.#process = spawn(process.execPath, args, { stdio: ["ignore", "ignore", "pipe"], env: { ...process.env, ...options.env } });
    killOnInterrupt(this.#process);
    this.#process.stderr!.setEncoding("utf8").on("data", (chunk: string) => (this.#log += chunk));
    this.#exited = new Promise((resolve) => this.#process.once("close", (code) => resolve(code)));
  }

  static async start(options: DaemonProcessOptions): Promise<DaemonProcess> {
    const daemon = new DaemonProcess(options);
    const deadline = Date.now() + START_LIMIT_MS;
    let exited = false;
    void daemon.#exited.then(() => (exited = true));
    while (!daemon.#log.includes("listening on")) {
      if (exited || Date.now() > deadline) {
        daemon.#process.kill("SIGKILL");
        throw new Error(`sessiondb serve did not start:\n${daemon.#log}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    daemon.#client = await openSessionDB({ path: options.db, mode: "daemon", socketPath: options.socket });
    return daemon;
  }

  async stats(): Promise<DaemonStats> {
    const daemon = this.#client?.daemon;
    if (!daemon) throw new Error("the daemon is stopped");
    return daemon.stats();
  }

  get pid(): number | undefined {
    return this.#process.pid;
  }

  /** What the daemon logged (stderr). */
  get log(): string {
    return this.#log;
  }

  /** SIGTERM (drain, checkpoint, exit 0); fails if it does not exit cleanly in time. */
  async stop(): Promise<void> {
    await this.#client?.close();
    this.#client = null;
    this.#process.kill("SIGTERM");
    const timer = setTimeout(() => this.#process.kill("SIGKILL"), STOP_LIMIT_MS);
    const code = await this.#exited;
    clearTimeout(timer);
    if (code !== 0) throw new Error(`sessiondb serve exited with ${code}:\n${this.#log}`);
  }

  /** Ends the daemon at once (cleanup after a failure). */
  kill(): void {
    if (this.#process.exitCode === null && this.#process.signalCode === null) this.#process.kill("SIGKILL");
  }
}

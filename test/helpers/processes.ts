/**
 * Real child processes for the tests: spawn a compiled fixture or a Python script, wait for a
 * line it prints, collect its output, and release many of them at the same instant.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/** A fixture compiled by tsc: `dist/test/fixtures/<name>.js`. */
export function compiledFixture(name: string): string {
  return fileURLToPath(new URL(`../fixtures/${name}.js`, import.meta.url));
}

/** A fixture tsc does not copy (Python, SQL), read from the source tree: `test/fixtures/<name>`. */
export function sourceFixture(name: string): string {
  return fileURLToPath(new URL(`../../../test/fixtures/${name}`, import.meta.url));
}

export interface Finished {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/**
 * How long a child may take to print what the test waits for before the test gives up on it: a
 * bound for a child that hangs, generous enough for a saturated machine.
 */
const WAIT_LIMIT_MS = 120_000;

/** One running child process with its output collected as it comes. */
export class Child {
  readonly done: Promise<Finished>;
  readonly #process: ChildProcess;
  #stdout = "";
  #stderr = "";
  #exited = false;
  #listeners = new Set<() => void>();

  constructor(
    command: string,
    args: readonly string[],
    options: { cwd?: string; env?: NodeJS.ProcessEnv; user?: { uid: number; gid: number } } = {},
  ) {
    this.#process = spawn(command, args, {
      cwd: options.cwd, env: options.env ?? process.env, stdio: ["ignore", "pipe", "pipe"], uid: options.user?.uid, gid: options.user?.gid,
    });
    this.#process.stdout!.setEncoding("utf8").on("data", (chunk: string) => {
      this.#stdout += chunk;
      this.#notify();
    });
    this.#process.stderr!.setEncoding("utf8").on("data", (chunk: string) => {
      this.#stderr += chunk;
    });
    this.done = new Promise((resolve, reject) => {
      this.#process.on("error", reject);
      this.#process.on("close", (code, signal) => {
        this.#exited = true;
        this.#notify();
        resolve({ code, signal, stdout: this.#stdout, stderr: this.#stderr });
      });
    });
  }

  get pid(): number | undefined {
    return this.#process.pid;
  }

  /** What it has printed so far. */
  get stdout(): string {
    return this.#stdout;
  }

  /** What it has printed on stderr so far (a daemon's log). */
  get stderr(): string {
    return this.#stderr;
  }

  /** Resolves once the child has printed a line equal to `line`; rejects if it exits first. */
  waitForLine(line: string): Promise<void> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => finish(new Error(`child ${this.pid} did not print "${line}" in time`)), WAIT_LIMIT_MS);
      const finish = (err?: Error) => {
        clearTimeout(timer);
        this.#listeners.delete(check);
        if (err) reject(err);
        else resolve();
      };
      const check = () => {
        if (this.#stdout.split("\n").includes(line)) finish();
        else if (this.#exited) finish(new Error(`child ${this.pid} exited before printing "${line}": ${this.#stderr}`));
      };
      this.#listeners.add(check);
      check();
    });
  }

  /** Ends the child if it still runs (cleanup after a failed test). */
  kill(): void {
    if (!this.#exited) this.#process.kill("SIGKILL");
  }

  #notify(): void {
    for (const listener of [...this.#listeners]) listener();
  }
}

export function spawnNode(script: string, args: readonly string[], options?: { cwd?: string }): Child {
  return new Child(process.execPath, [script, ...args], options);
}

export function spawnPython(script: string, args: readonly string[]): Child {
  return new Child("python3", [script, ...args]);
}

/** Runs a child to completion and fails unless it exits with status 0. */
export async function runToSuccess(child: Child): Promise<Finished> {
  const result = await child.done;
  if (result.code !== 0) {
    throw new Error(`child exited with ${result.code ?? result.signal}: ${result.stderr}\n${result.stdout}`);
  }
  return result;
}

/** The last line a child printed, parsed as JSON: the fixtures report their results that way. */
export function lastJsonLine<T>(result: Finished): T {
  const lines = result.stdout.trim().split("\n");
  return JSON.parse(lines[lines.length - 1] ?? "null") as T;
}

/**
 * A start gate: children print `ready` and then poll for the gate file, so that all of them are
 * loaded and waiting before the test opens the gate, and they start within a few milliseconds.
 */
export async function releaseTogether(children: readonly Child[], gateFile: string): Promise<void> {
  try {
    await Promise.all(children.map((c) => c.waitForLine("ready")));
  } finally {
    writeFileSync(gateFile, "go");
  }
}

export function gatePath(dir: string): string {
  return join(dir, "start.gate");
}

/** Whether a process with this pid exists (signal 0 checks without sending anything). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

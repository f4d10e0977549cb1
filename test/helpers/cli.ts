/**
 * The built `sessiondb` command as a child process: run it to completion, or keep `serve`
 * running until the test ends. Everything gets an explicit `--db`, so no test touches
 * `~/.hermes`.
 */
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { fileURLToPath } from "node:url";
import { setTimeout as sleep } from "node:timers/promises";
import { openSessionDB } from "../../src/index.js";

export const CLI = fileURLToPath(new URL("../../src/cli/main.js", import.meta.url));

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  /** What the command reads on stdin, which is never a terminal. Default: nothing. */
  input?: string;
  env?: Record<string, string>;
  /** A command the CLI runs under, e.g. `setpriv` options that make it another user. */
  wrapper?: readonly string[];
}

/** Runs `sessiondb --db <db> ...args` and collects its output. */
export async function runCli(db: string, args: readonly string[], options: RunOptions = {}): Promise<CliResult> {
  // No inherited $COLUMNS or $NO_COLOR: the output is the same wherever the tests run.
  const { COLUMNS: _columns, NO_COLOR: _noColor, ...inherited } = process.env;
  const [command, ...wrapped] = [...(options.wrapper ?? []), process.execPath, CLI, "--db", db, ...args];
  const child = spawn(command!, wrapped, {
    stdio: ["pipe", "pipe", "pipe"],
    env: { ...inherited, SESSIONDB_PATH: db, ...options.env },
  });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  child.stdin.on("error", () => {
    // The command may exit without reading its input.
  });
  child.stdin.end(options.input ?? "");
  const [code] = (await once(child, "close")) as [number | null];
  return { code, stdout, stderr };
}

/** Asserts a failure: the exit code, and exactly one stderr line starting with `prefix`. */
export function assertFails(result: CliResult, code: 1 | 2, prefix: string): void {
  assert.equal(result.code, code, `expected exit ${code}, got ${result.code}: ${result.stderr}`);
  const lines = result.stderr.trimEnd().split("\n");
  assert.ok(lines.some((l) => l.startsWith(prefix)), `stderr should say ${JSON.stringify(prefix)}: ${result.stderr}`);
  if (code === 1) assert.equal(lines.length, 1, `one stderr line expected: ${result.stderr}`);
}

/** Runs the command and parses its `--json` output. */
export async function runJson<T>(db: string, args: readonly string[], options: RunOptions = {}): Promise<T> {
  const result = await runCli(db, ["--json", ...args], options);
  if (result.code !== 0) throw new Error(`sessiondb ${args.join(" ")} exited ${result.code}: ${result.stderr}`);
  return JSON.parse(result.stdout) as T;
}

/** A running `sessiondb serve`. */
export class ServeProcess {
  readonly #child: ChildProcess;
  readonly exited: Promise<number | null>;
  log = "";

  private constructor(child: ChildProcess) {
    this.#child = child;
    child.stderr!.setEncoding("utf8").on("data", (chunk: string) => (this.log += chunk));
    this.exited = once(child, "close").then(([code]) => code as number | null);
  }

  get pid(): number {
    return this.#child.pid!;
  }

  /** Starts `serve` for `db` and resolves once it logs that it is listening. */
  static async start(db: string): Promise<ServeProcess> {
    const child = spawn(process.execPath, [CLI, "--db", db, "serve", "--readers", "2"], { stdio: ["ignore", "ignore", "pipe"] });
    const serve = new ServeProcess(child);
    // A bound for a start that never comes, not a speed target: a saturated machine is slow.
    const deadline = Date.now() + 120_000;
    while (!serve.log.includes("listening on")) {
      if (child.exitCode !== null || Date.now() > deadline) {
        child.kill("SIGKILL");
        throw new Error(`serve did not start: ${serve.log}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    return serve;
  }

  /** SIGTERM, then waits for the exit; a no-op once it has exited. */
  async stop(): Promise<void> {
    if (this.#child.exitCode === null && this.#child.signalCode === null) this.#child.kill("SIGTERM");
    await this.exited;
  }
}

/** Ids of the seeded sessions. */
export const SEED = {
  alpha: "s-alpha-1",
  alphaChild: "s-alpha-2",
  beta: "s-beta",
  titled: "s-titled",
  doomed: "s-doomed",
  old: "s-old",
} as const;

/**
 * A small database, written directly before any daemon starts: a titled conversation with a
 * tool call and a terminal escape in a tool result, a child on another source with CJK text,
 * an ended session, and sessions that tests change (title, delete, prune). Sessions start a few
 * milliseconds apart, so "newest first" has one answer.
 */
export async function seedDatabase(path: string): Promise<void> {
  const db = await openSessionDB({ path, mode: "direct" });
  try {
    await db.createSession(SEED.alpha, "cli", {
      model: "gpt-test", modelConfig: { temperature: 0.2 }, systemPrompt: "You are terse.", userId: "u-1",
    });
    await db.setSessionTitle(SEED.alpha, "Deploy plan");
    await db.appendMessage(SEED.alpha, { role: "user", content: "How do we deploy the chat-send service?\nIt is urgent." });
    await db.appendMessage(SEED.alpha, {
      role: "assistant",
      content: "Let me check the pods.",
      reasoning: "The user wants pods.",
      reasoningDetails: [{ type: "summary", text: "pods" }],
      codexReasoningItems: [{ id: "r1" }],
      finishReason: "tool_calls",
      tokenCount: 17,
      toolCalls: [{ id: "call-1", type: "function", function: { name: "shell", arguments: '{"cmd":"kubectl get pods"}' } }],
    });
    await db.appendMessage(SEED.alpha, { role: "tool", content: "pod-1 Running \x1b[31mred\x1b[0m", toolCallId: "call-1", toolName: "shell" });
    await db.updateTokenCounts(SEED.alpha, { inputTokens: 120, outputTokens: 40, estimatedCostUsd: 0.02 });
    await sleep(3);
    await db.createSession(SEED.alphaChild, "telegram", { parentSessionId: SEED.alpha });
    await db.appendMessage(SEED.alphaChild, { role: "user", content: "继续部署 deploy 吗？" });
    await sleep(3);
    await db.createSession(SEED.beta, "cli");
    await db.appendMessage(SEED.beta, { role: "user", content: "unrelated words about gardening" });
    await db.endSession(SEED.beta, "user_exit");
    await sleep(3);
    await db.createSession(SEED.titled, "cli");
    await sleep(3);
    await db.createSession(SEED.doomed, "cli");
    await db.appendMessage(SEED.doomed, { role: "user", content: "delete me" });
    await sleep(3);
    await db.createSession(SEED.old, "oldsrc");
    await db.endSession(SEED.old, "done");
  } finally {
    await db.close();
  }
}

/**
 * Real daemons for the tests: `sessiondb serve` as a child process on a database in a short
 * temp dir under /tmp (socket paths must stay short), waited for until it answers `hello`, and
 * stopped (SIGTERM) or killed (SIGKILL) by pid.
 */
import { mkdtempSync, realpathSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { TestContext } from "node:test";
import { fileURLToPath } from "node:url";
import { setTimeout as sleep } from "node:timers/promises";
import { openSessionDB, type OpenOptions, type SessionDB } from "../../src/index.js";
import type { DaemonControl, DaemonStats, HelloResult } from "../../src/protocol/control.js";
import { probeDaemon } from "../../src/protocol/probe.js";
import { Child, sourceFixture, spawnPython, type Finished } from "./processes.js";
import { removeTree } from "./temp-dir.js";

/** The compiled CLI: `dist/src/cli/main.js`. */
export const CLI = fileURLToPath(new URL("../../src/cli/main.js", import.meta.url));

/**
 * How long a daemon may take to answer after it was spawned: a bound for one that never does,
 * not a speed target (on a saturated machine a healthy one has taken over 17 s).
 */
const START_LIMIT_MS = 120_000;

/** A temp dir directly under /tmp (whatever TMPDIR says), removed when the test ends. */
export function shortTempDir(t: TestContext): string {
  const dir = mkdtempSync("/tmp/sdb-");
  t.after(() => removeTree(dir));
  return dir;
}

export interface ServeOptions {
  /** Reader threads; 2 keeps many daemons per test run cheap. */
  readers?: number;
  socketPath?: string;
  env?: NodeJS.ProcessEnv;
  /** More `serve` flags. */
  args?: readonly string[];
}

/** Spawns `sessiondb --db <dbPath> serve` without waiting for it. */
export function spawnServe(dbPath: string, options: ServeOptions = {}): Child {
  const args = [CLI, "--db", dbPath, "serve", "--readers", String(options.readers ?? 2)];
  if (options.socketPath !== undefined) args.push("--socket", options.socketPath);
  args.push(...(options.args ?? []));
  return new Child(process.execPath, args, { env: { ...process.env, ...options.env } });
}

/** One `serve` child process that answered hello. */
export class DaemonProcess {
  readonly child: Child;
  readonly dbPath: string;
  readonly socketPath: string;
  readonly hello: HelloResult;

  constructor(child: Child, dbPath: string, socketPath: string, hello: HelloResult) {
    this.child = child;
    this.dbPath = dbPath;
    this.socketPath = socketPath;
    this.hello = hello;
  }

  get pid(): number {
    return this.hello.pid;
  }

  /** SIGTERM, then the exit. */
  stop(): Promise<Finished> {
    return this.signal("SIGTERM");
  }

  /** `kill -9`, then the exit. */
  kill9(): Promise<Finished> {
    return this.signal("SIGKILL");
  }

  signal(signal: NodeJS.Signals): Promise<Finished> {
    try {
      process.kill(this.pid, signal);
    } catch {
      // already gone
    }
    return this.child.done;
  }

  /** A client for this daemon (mode "daemon"), closed when the test ends. */
  async open(t: TestContext, options: OpenOptions = {}): Promise<SessionDB> {
    const db = await openSessionDB({ path: this.dbPath, socketPath: this.socketPath, mode: "daemon", ...options });
    t.after(() => db.close());
    return db;
  }
}

/**
 * Waits until the daemon spawned as `child` answers hello on `socketPath` (another daemon's
 * answer does not count); fails with its stderr if it exits first.
 */
export async function waitUntilServing(child: Child, socketPath: string): Promise<HelloResult> {
  let exited: Finished | null = null;
  void child.done.then((f) => (exited = f), () => undefined);
  const until = Date.now() + START_LIMIT_MS;
  while (Date.now() < until) {
    if (exited !== null) {
      const f: Finished = exited;
      throw new Error(`serve exited with ${f.code ?? f.signal} before listening: ${f.stderr}`);
    }
    const hello = await probeDaemon(socketPath, 500);
    if (hello !== null && hello.pid === child.pid) return hello;
    await sleep(5);
  }
  child.kill();
  throw new Error(`serve (pid ${child.pid}) did not answer on ${socketPath} within ${START_LIMIT_MS} ms`);
}

/** Starts a daemon for `dbPath` and waits until it serves; it is killed when the test ends. */
export async function startDaemon(t: TestContext, dbPath: string, options: ServeOptions = {}): Promise<DaemonProcess> {
  const socketPath = options.socketPath ?? `${dbPath}.sock`;
  const child = spawnServe(dbPath, options);
  t.after(() => killAndWait(child));
  const hello = await waitUntilServing(child, socketPath);
  return new DaemonProcess(child, dbPath, socketPath, hello);
}

/** SIGKILLs a child that still runs and waits for it to be gone. */
export async function killAndWait(child: Child): Promise<void> {
  child.kill();
  await child.done.catch(() => undefined);
}

/** The control ops of a handle a daemon serves. */
export function controlOf(db: SessionDB): DaemonControl {
  if (db.daemon === null) throw new Error(`a ${db.mode} handle has no daemon to control`);
  return db.daemon;
}

/** The daemon's `stats`, through any daemon-mode handle. */
export function daemonStats(db: SessionDB): Promise<DaemonStats> {
  return controlOf(db).stats();
}

/** A fresh database path in a short temp dir. */
export function freshDbPath(t: TestContext): string {
  return join(shortTempDir(t), "state.db");
}

/** A fresh database (its real path) holding one session, `s`, written by a direct-mode handle since closed. */
export async function seededDatabase(t: TestContext): Promise<string> {
  const path = freshDbPath(t);
  const db = await openSessionDB({ path, mode: "direct" });
  await db.createSession("s", "cli");
  await db.close();
  return realpathSync(path);
}

/**
 * Another process takes the write lock (`BEGIN IMMEDIATE`, the reference's own way of writing,
 * test/fixtures/hermes_writer.py) and holds it until `release()`; it also writes one message to a
 * session `lock-holder`.
 */
export async function holdWriteLock(t: TestContext, dbPath: string): Promise<{ release(): Promise<void> }> {
  const releaseFile = `${dbPath}.release-lock`;
  // Its own time limit only frees a lock a failed test never released.
  const holder = spawnPython(sourceFixture("hermes_writer.py"), ["hold", dbPath, "600", releaseFile]);
  t.after(() => killAndWait(holder));
  await holder.waitForLine("locked");
  return {
    async release() {
      writeFileSync(releaseFile, "go");
      await holder.waitForLine("released");
    },
  };
}

/**
 * What an idle daemon costs (issue 29): its memory (VmRSS, and the private and proportional
 * shares of it) and its wake-ups after a quiet spell with no client, fresh and after some use; a
 * soak that watches the RSS for growth while it idles (quick: a minute, `--full`: an hour); the
 * first read's extra latency once the reader pool has shrunk to nothing; and the first write's
 * once the writer thread ended for want of clients (a client connecting starts it again).
 *
 * Wake-ups are context switches (voluntary and not) of all the daemon's threads, read from
 * /proc/<pid>/task/<tid>/status: on an idle process each one is a wake-up.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { openSessionDB, type SessionDB } from "../src/index.js";
import { processCpuMs } from "./cpu-usage.js";
import { killOnInterrupt } from "./interrupt.js";
import { CLI_PATH } from "./paths.js";
import { summarizeLatencies, type LatencySummary } from "./stats.js";

export interface IdleFootprintOptions {
  workDir: string;
  socketDir: string;
  /** The `sessiondb` CLI to run (default: this build's); another build's to compare. */
  cli?: string;
  /** Quiet time with no client before a measurement (the 10 s). */
  settleSeconds: number;
  /** The window over which wake-ups and CPU are counted. */
  windowSeconds: number;
  /** The soak's length; 0 skips it. */
  soakSeconds: number;
  /** First reads timed after the pool shrank. */
  coldReads: number;
}

/** One look at the daemon process. Memory in KiB. */
export interface ProcessSample {
  atS: number;
  rssKb: number;
  /** Private memory: the heaps, stacks and buffers of this process alone. */
  anonKb: number;
  /** Mapped files, the node binary's code mostly, shared with every other Node process. */
  fileKb: number;
  /** The proportional share (shared pages divided among their users); null where unknown. */
  pssKb: number | null;
  threads: number;
}

export interface IdleWindow {
  /** Memory at the window's start. */
  sample: ProcessSample;
  wakeupsPerS: number;
  /** CPU time per second of the window, in ms (10 = 1 % of a core). */
  cpuMsPerS: number | null;
}

export interface IdleFootprintResult {
  settleSeconds: number;
  windowSeconds: number;
  /** Just started, never used, no client for `settleSeconds`. */
  fresh: IdleWindow;
  /** After writes and reads from one client that then left, and `settleSeconds` more (past the reader idle time). */
  afterUse: IdleWindow;
  /** Null when skipped. */
  soak: {
    seconds: number;
    samples: ProcessSample[];
    /** Last minus first sample. */
    rssGrowthKb: number;
    anonGrowthKb: number;
    wakeupsPerS: number;
  } | null;
  /** `getSession` right after the pool shrank to nothing (a thread starts), and on a warm pool. */
  firstReadMs: { cold: LatencySummary; warm: LatencySummary; readerIdleS: number };
  /**
   * A client connecting and making one `appendMessage`, timed from the connect to the answer:
   * after the writer thread ended (`--writer-idle`; its start overlaps the handshake), and while
   * it runs (another client holds it).
   */
  firstWriteMs: { cold: LatencySummary; warm: LatencySummary; writerIdleS: number };
}

/** Context switches of every thread alive now, by thread id. */
function switchesByThread(pid: number): Map<string, number> {
  const counts = new Map<string, number>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const status = readFileSync(`/proc/${pid}/task/${tid}/status`, "utf8");
      const voluntary = Number(/^voluntary_ctxt_switches:\s+(\d+)/m.exec(status)?.[1] ?? 0);
      const forced = Number(/^nonvoluntary_ctxt_switches:\s+(\d+)/m.exec(status)?.[1] ?? 0);
      counts.set(tid, voluntary + forced);
    } catch {
      // the thread ended while being read
    }
  }
  return counts;
}

/** Switches between two readings: threads that lived through both, plus all of those born since. */
function switchesBetween(before: Map<string, number>, after: Map<string, number>): number {
  let total = 0;
  for (const [tid, n] of after) total += n - (before.get(tid) ?? 0);
  return total;
}

function kb(text: string, field: string): number {
  return Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(text)?.[1] ?? Number.NaN);
}

export function sampleProcess(pid: number, t0: number): ProcessSample {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  let pssKb: number | null = null;
  try {
    pssKb = kb(readFileSync(`/proc/${pid}/smaps_rollup`, "utf8"), "Pss");
  } catch {
    // no smaps_rollup (an old kernel)
  }
  return {
    atS: (performance.now() - t0) / 1000,
    rssKb: kb(status, "VmRSS"),
    anonKb: kb(status, "RssAnon"),
    fileKb: kb(status, "RssFile"),
    pssKb,
    threads: Number(/^Threads:\s+(\d+)/m.exec(status)?.[1] ?? Number.NaN),
  };
}

export async function measureWindow(pid: number, seconds: number, t0: number): Promise<IdleWindow> {
  const sample = sampleProcess(pid, t0);
  const switches = switchesByThread(pid);
  const cpu = processCpuMs(pid);
  const start = performance.now();
  await sleep(seconds * 1000);
  const elapsedS = (performance.now() - start) / 1000;
  const cpuAfter = processCpuMs(pid);
  return {
    sample,
    wakeupsPerS: switchesBetween(switches, switchesByThread(pid)) / elapsedS,
    cpuMsPerS: cpu === null || cpuAfter === null ? null : (cpuAfter - cpu) / elapsedS,
  };
}

/** A `serve` process with no client of the bench's connected (unlike ./daemon-process.ts). */
class IdleDaemon {
  readonly db: string;
  readonly socket: string;
  readonly #child: ChildProcess;
  readonly #exited: Promise<void>;
  #log = "";

  constructor(cli: string, db: string, socket: string, extra: string[]) {
    this.db = db;
    this.socket = socket;
    // A runtime folder of its own: the shared one wakes every daemon watching it whenever another
    // daemon on the machine starts or stops (its identity socket and lock), which is not this one's cost.
    const runtime = join(dirname(socket), `${basename(socket)}.run`);
    mkdirSync(runtime, { recursive: true, mode: 0o700 });
    const env = { ...process.env, XDG_RUNTIME_DIR: runtime };
    this.#child = spawn(process.execPath, [cli, "--db", db, "serve", "--socket", socket, ...extra], { stdio: ["ignore", "ignore", "pipe"], env });
    killOnInterrupt(this.#child);
    this.#child.stderr!.setEncoding("utf8").on("data", (chunk: string) => (this.#log += chunk));
    this.#exited = new Promise((resolve) => this.#child.once("close", () => resolve()));
  }

  get pid(): number {
    return this.#child.pid!;
  }

  async listening(): Promise<void> {
    const until = Date.now() + 60_000;
    while (!this.#log.includes("listening on")) {
      if (this.#child.exitCode !== null || Date.now() > until) throw new Error(`sessiondb serve did not start:\n${this.#log}`);
      await sleep(10);
    }
  }

  open(): Promise<SessionDB> {
    return openSessionDB({ path: this.db, socketPath: this.socket, mode: "daemon" });
  }

  async stop(): Promise<void> {
    this.#child.kill("SIGTERM");
    await this.#exited;
  }
}

/** Some use, as an agent's session would make: writes, point reads, searches and listings. */
async function use(daemon: IdleDaemon): Promise<void> {
  const db = await daemon.open();
  try {
    for (let s = 0; s < 10; s++) {
      await db.createSession(`idle-${s}`, "cli", { model: "m" });
      await Promise.all(Array.from({ length: 50 }, (_, i) => db.appendMessage(`idle-${s}`, { role: i % 2 ? "assistant" : "user", content: `message ${i} of session ${s} about footprint` })));
    }
    for (let i = 0; i < 50; i++) {
      await db.getSession(`idle-${i % 10}`);
      await db.searchMessages("footprint", { limit: 5 });
      await db.listSessionsRich({ limit: 10 });
    }
  } finally {
    await db.close();
  }
}

async function firstReads(options: IdleFootprintOptions, cli: string, log: (line: string) => void): Promise<IdleFootprintResult["firstReadMs"]> {
  const readerIdleS = 0.5;
  const daemon = new IdleDaemon(cli, join(options.workDir, "idle-cold.db"), join(options.socketDir, "idle-cold.sock"), ["--reader-idle", String(readerIdleS)]);
  try {
    await daemon.listening();
    const db = await daemon.open();
    try {
      await db.createSession("s", "cli");
      const cold: number[] = [];
      const warm: number[] = [];
      for (let i = 0; i < options.coldReads; i++) {
        // The pool shrinks while this client stays connected: reader threads end for want of reads.
        const until = Date.now() + 60_000;
        while (db.daemon !== null && (await db.daemon.stats()).readers.live > 0) {
          if (Date.now() > until) throw new Error("the reader pool did not shrink to nothing");
          await sleep(20);
        }
        let t = performance.now();
        await db.getSession("s");
        cold.push(performance.now() - t);
        for (let j = 0; j < 5; j++) {
          t = performance.now();
          await db.getSession("s");
          warm.push(performance.now() - t);
        }
      }
      const result = { cold: summarizeLatencies(cold), warm: summarizeLatencies(warm), readerIdleS };
      log(`idle: first read after the pool shrank p50 ${result.cold.p50.toFixed(1)} ms (warm ${result.warm.p50.toFixed(2)} ms)`);
      return result;
    } finally {
      await db.close();
    }
  } finally {
    await daemon.stop();
  }
}

/** The daemon's threads named `name` (workers/thread-name.ts). */
function threadsNamed(pid: number, name: string): number {
  let n = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      if (readFileSync(`/proc/${pid}/task/${tid}/comm`, "utf8").trim() === name) n++;
    } catch {
      // the thread ended while being read
    }
  }
  return n;
}

async function connectAndWrite(daemon: IdleDaemon, i: number): Promise<number> {
  const t = performance.now();
  const db = await daemon.open();
  try {
    await db.appendMessage("s", { role: "user", content: `first write ${i}` });
    return performance.now() - t;
  } finally {
    await db.close();
  }
}

async function firstWrites(options: IdleFootprintOptions, cli: string, log: (line: string) => void): Promise<IdleFootprintResult["firstWriteMs"]> {
  const writerIdleS = 0.5;
  const daemon = new IdleDaemon(cli, join(options.workDir, "idle-write.db"), join(options.socketDir, "idle-write.sock"), ["--writer-idle", String(writerIdleS)]);
  try {
    await daemon.listening();
    const seed = await daemon.open();
    await seed.createSession("s", "cli");
    await seed.close();
    const cold: number[] = [];
    const warm: number[] = [];
    for (let i = 0; i < options.coldReads; i++) {
      const until = Date.now() + 60_000;
      while (threadsNamed(daemon.pid, "sdb-writer") > 0) {
        if (Date.now() > until) throw new Error("the writer thread did not end with no client connected");
        await sleep(20);
      }
      cold.push(await connectAndWrite(daemon, i));
      // Warm: another client keeps the writer running meanwhile.
      const holder = await daemon.open();
      try {
        await holder.getSession("s");
        for (let j = 0; j < 3; j++) warm.push(await connectAndWrite(daemon, i));
      } finally {
        await holder.close();
      }
    }
    const result = { cold: summarizeLatencies(cold), warm: summarizeLatencies(warm), writerIdleS };
    log(`idle: first write after the writer stopped p50 ${result.cold.p50.toFixed(1)} ms (writer running ${result.warm.p50.toFixed(2)} ms)`);
    return result;
  } finally {
    await daemon.stop();
  }
}

export async function runIdleFootprint(options: IdleFootprintOptions, log: (line: string) => void): Promise<IdleFootprintResult> {
  const cli = options.cli ?? CLI_PATH;
  const daemon = new IdleDaemon(cli, join(options.workDir, "idle.db"), join(options.socketDir, "idle.sock"), []);
  const t0 = performance.now();
  try {
    await daemon.listening();
    log(`idle: daemon pid ${daemon.pid}, no client for ${options.settleSeconds} s, then ${options.windowSeconds} s counted`);
    await sleep(options.settleSeconds * 1000);
    const fresh = await measureWindow(daemon.pid, options.windowSeconds, t0);
    log(`idle: fresh: RSS ${(fresh.sample.rssKb / 1024).toFixed(1)} MiB, ${fresh.wakeupsPerS.toFixed(2)} wake-ups/s`);
    await use(daemon);
    await sleep(options.settleSeconds * 1000);
    const afterUse = await measureWindow(daemon.pid, options.windowSeconds, t0);
    log(`idle: after use: RSS ${(afterUse.sample.rssKb / 1024).toFixed(1)} MiB, ${afterUse.wakeupsPerS.toFixed(2)} wake-ups/s`);
    let soak: IdleFootprintResult["soak"] = null;
    if (options.soakSeconds > 0) {
      log(`idle: soak of ${options.soakSeconds} s`);
      const every = Math.max(1, options.soakSeconds / 60);
      const samples: ProcessSample[] = [sampleProcess(daemon.pid, t0)];
      const switches = switchesByThread(daemon.pid);
      const start = performance.now();
      while ((performance.now() - start) / 1000 < options.soakSeconds) {
        await sleep(Math.min(every, options.soakSeconds - (performance.now() - start) / 1000) * 1000);
        samples.push(sampleProcess(daemon.pid, t0));
      }
      const first = samples[0]!;
      const last = samples.at(-1)!;
      soak = {
        seconds: options.soakSeconds,
        samples,
        rssGrowthKb: last.rssKb - first.rssKb,
        anonGrowthKb: last.anonKb - first.anonKb,
        wakeupsPerS: switchesBetween(switches, switchesByThread(daemon.pid)) / ((performance.now() - start) / 1000),
      };
      log(`idle: soak: RSS ${(first.rssKb / 1024).toFixed(1)} → ${(last.rssKb / 1024).toFixed(1)} MiB, ${soak.wakeupsPerS.toFixed(2)} wake-ups/s`);
    }
    const firstReadMs = await firstReads(options, cli, log);
    const firstWriteMs = await firstWrites(options, cli, log);
    return { settleSeconds: options.settleSeconds, windowSeconds: options.windowSeconds, fresh, afterUse, soak, firstReadMs, firstWriteMs };
  } finally {
    await daemon.stop();
  }
}

function mib(kb: number | null): string {
  return kb === null || !Number.isFinite(kb) ? "—" : (kb / 1024).toFixed(1);
}

/** The report's table (Markdown, as the README quotes it). */
export function idleFootprintTable(idle: IdleFootprintResult): string {
  const row = (label: string, w: IdleWindow) => `| ${label} | ${mib(w.sample.rssKb)} | ${mib(w.sample.anonKb)} | ${mib(w.sample.fileKb)} | ${mib(w.sample.pssKb)} | ${w.sample.threads} | ${w.wakeupsPerS.toFixed(2)} | ${w.cpuMsPerS === null ? "—" : w.cpuMsPerS.toFixed(2)} |`;
  const lines = [
    `Idle daemon (\`serve\` with its defaults), after ${idle.settleSeconds} s with no client; wake-ups (context switches of all its threads) and CPU counted over ${idle.windowSeconds} s.`,
    "",
    "| idle | VmRSS MiB | private (anon) MiB | files MiB | PSS MiB | threads | wake-ups/s | CPU ms/s |",
    "|---|---|---|---|---|---|---|---|",
    row("fresh", idle.fresh),
    row("after use", idle.afterUse),
  ];
  if (idle.soak !== null) {
    const s = idle.soak;
    const first = s.samples[0]!;
    const last = s.samples.at(-1)!;
    const max = Math.max(...s.samples.map((x) => x.rssKb));
    lines.push(
      "",
      `Soak: ${s.seconds} s idle after use: VmRSS ${mib(first.rssKb)} → ${mib(last.rssKb)} MiB (max ${mib(max)}; growth ${(s.rssGrowthKb / 1024).toFixed(2)} MiB, private ${(s.anonGrowthKb / 1024).toFixed(2)} MiB), ${s.wakeupsPerS.toFixed(2)} wake-ups/s.`,
    );
  }
  const f = idle.firstReadMs;
  lines.push(
    "",
    `First read after the reader pool shrank to nothing (\`--reader-idle ${f.readerIdleS}\`, a thread starts): getSession p50 ${f.cold.p50.toFixed(1)} ms, max ${f.cold.max.toFixed(1)} ms (${f.cold.count} reads); on a warm pool p50 ${f.warm.p50.toFixed(2)} ms: ${(f.cold.p50 - f.warm.p50).toFixed(1)} ms extra.`,
  );
  const w = idle.firstWriteMs;
  lines.push(
    "",
    `First write after the writer thread ended (\`--writer-idle ${w.writerIdleS}\`, no client; the thread starts as the client connects), connect + appendMessage: p50 ${w.cold.p50.toFixed(1)} ms, max ${w.cold.max.toFixed(1)} ms (${w.cold.count} clients); with the writer running p50 ${w.warm.p50.toFixed(2)} ms: ${(w.cold.p50 - w.warm.p50).toFixed(1)} ms extra.`,
  );
  return lines.join("\n");
}

/**
 * Issue 28's "under load" claim: a backup and a check through the daemon while 8 writers append
 * must keep the writers' p99 within 2× of the same run without them. Alternating runs on one
 * daemon over one file (8 clients appending flat out, each its own connection): without
 * maintenance, then with `sessiondb backup` and `sessiondb check` run back to back for the whole
 * run (child processes, as an operator runs them). Prints the table and writes JSON to
 * bench/results/<time>-maintenance-load.json.
 *
 *   npm run build && node dist/bench/maintenance-load.js [--seconds 15] [--messages 100000] [--reps 2]
 */
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { defaultSocketPath, openSessionDB, type SessionDB } from "../src/index.js";
import { DaemonProcess } from "./daemon-process.js";
import { CLI_PATH, DEFAULT_RESULTS_DIR } from "./paths.js";
import { summarizeLatencies, type LatencySummary } from "./stats.js";

const WRITERS = 8;

interface Options { seconds: number; messages: number; reps: number }

interface Run {
  maintenance: boolean;
  appends: number;
  latencyMs: LatencySummary;
  backups: number;
  checks: number;
}

function parse(argv: string[]): Options {
  const options: Options = { seconds: 15, messages: 100_000, reps: 2 };
  for (let i = 0; i < argv.length; i += 2) {
    const key = argv[i]?.replace(/^--/, "") as keyof Options;
    const value = Number(argv[i + 1]);
    if (!(key in options) || !Number.isFinite(value) || value <= 0) throw new Error(`usage: maintenance-load [--seconds N] [--messages N] [--reps N]`);
    options[key] = value;
  }
  return options;
}

/** A file of `messages` messages in sessions of 50 (the schema made by the library, rows in bulk). */
async function makeFile(path: string, messages: number): Promise<void> {
  const db = await openSessionDB({ path, mode: "direct" });
  await db.close();
  const raw = new Database(path);
  raw.exec("BEGIN");
  const session = raw.prepare("INSERT INTO sessions (id, source, started_at) VALUES (?, 'bench', ?)");
  const message = raw.prepare("INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, ?, ?, ?)");
  for (let m = 0; m < messages; m++) {
    const s = Math.floor(m / 50);
    if (m % 50 === 0) session.run(`s-${s}`, 1_700_000_000 + s);
    message.run(`s-${s}`, m % 2 === 0 ? "user" : "assistant", `message ${m} of session ${s}: ${"the quick brown fox jumps over the lazy dog ".repeat(6)}`, 1_700_000_000 + s + (m % 50) / 100);
  }
  raw.exec("COMMIT");
  raw.pragma("wal_checkpoint(TRUNCATE)");
  raw.close();
}

function cli(db: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI_PATH, "--db", db, ...args], {
      stdio: ["ignore", "ignore", "pipe"],
    });
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (c: string) => (stderr += c));
    child.once("close", (code) => (code === 0 ? resolve() : reject(new Error(`sessiondb ${args.join(" ")} exited ${code}: ${stderr}`))));
  });
}

async function run(clients: SessionDB[], maintenance: boolean, seconds: number, db: string, dir: string, rep: number): Promise<Run> {
  const until = performance.now() + seconds * 1000;
  const latencies: number[] = [];
  let backups = 0;
  let checks = 0;
  const writers = clients.map(async (client, w) => {
    const session = `writer-${w}`;
    await client.ensureSession(session, "bench");
    let n = 0;
    while (performance.now() < until) {
      const start = performance.now();
      await client.appendMessage(session, { role: "assistant", content: `rep ${rep} write ${n++}` });
      latencies.push(performance.now() - start);
    }
  });
  const upkeep = (async () => {
    while (maintenance && performance.now() < until) {
      await cli(db, ["backup", join(dir, "backup.db")]);
      backups++;
      if (performance.now() >= until) break;
      await cli(db, ["check"]);
      checks++;
    }
  })();
  await Promise.all([...writers, upkeep]);
  return { maintenance, appends: latencies.length, latencyMs: summarizeLatencies(latencies), backups, checks };
}

const options = parse(process.argv.slice(2));
const dir = mkdtempSync(join(tmpdir(), "sdb-mload-"));
try {
  const db = join(dir, "state.db");
  // The default socket: the CLI's backup and check find the daemon as an operator's would.
  const socket = defaultSocketPath(db);
  await makeFile(db, options.messages);
  const fileMiB = statSync(db).size / 1048576;
  console.log(`file: ${options.messages} messages, ${fileMiB.toFixed(1)} MiB; ${WRITERS} writers; ${options.seconds} s per run, ${options.reps} reps`);
  const daemon = await DaemonProcess.start({ db, socket, synchronous: "FULL", walLimitMb: null });
  const runs: Run[] = [];
  try {
    const clients = await Promise.all(Array.from({ length: WRITERS }, () => openSessionDB({ path: db, mode: "daemon", socketPath: socket })));
    for (let rep = 0; rep < options.reps; rep++) {
      for (const maintenance of [false, true]) {
        const r = await run(clients, maintenance, options.seconds, db, dir, rep);
        runs.push(r);
        const l = r.latencyMs;
        console.log(`${maintenance ? "with backup+check" : "alone            "}  appends ${String(r.appends).padStart(6)}  p50 ${l.p50.toFixed(2)} ms  p99 ${l.p99.toFixed(2)} ms  max ${l.max.toFixed(1)} ms  (${r.backups} backups, ${r.checks} checks)`);
      }
    }
    const stats = await daemon.stats();
    await Promise.all(clients.map((c) => c.close()));
    const p99 = (m: boolean) => {
      const values = runs.filter((r) => r.maintenance === m).map((r) => r.latencyMs.p99).sort((a, b) => a - b);
      return values[values.length >> 1]!;
    };
    const ratio = p99(true) / p99(false);
    console.log(`writers' p99: ${p99(false).toFixed(2)} ms alone, ${p99(true).toFixed(2)} ms with backup+check: ${ratio.toFixed(2)}× (target ≤ 2×) — ${ratio <= 2 ? "met" : "NOT met"}`);
    console.log(`daemon: WAL ${(stats.walBytes / 1048576).toFixed(1)} MiB at the end, ${stats.writer.checkpoints.truncate} TRUNCATE checkpoints`);
    mkdirSync(DEFAULT_RESULTS_DIR, { recursive: true });
    const out = join(DEFAULT_RESULTS_DIR, `${new Date().toISOString().replace(/[:.]/g, "-")}-maintenance-load.json`);
    writeFileSync(out, `${JSON.stringify({ options, writers: WRITERS, fileMiB, runs, p99Alone: p99(false), p99WithMaintenance: p99(true), ratio }, null, 2)}\n`);
    console.log(`wrote ${out}`);
  } finally {
    await daemon.stop();
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}

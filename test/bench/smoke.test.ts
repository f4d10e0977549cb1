/**
 * The benchmark suite at tiny sizes, so its code cannot rot: every convoy mode (the PostgreSQL
 * ones on a throwaway server of their own), the read side
 * and the WAL check run for a moment through the real `bench/run.js`, and must produce the
 * results JSON and the charts with no lost append in any mode.
 */
import assert from "node:assert/strict";
import { execFile, spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import type { BenchResult, IdleOnlyResult } from "../../bench/bench-result.js";
import { BenchChild } from "../../bench/child-process.js";
import { CONVOY_MODES, MODES } from "../../bench/modes.js";
import { buildFsyncDelayLibrary, fsyncDelayEnv } from "../../bench/fsync-delay.js";
import { READ_OPS } from "../../bench/read-side.js";
import { tempDir } from "../helpers/temp-dir.js";
import { waitUntil } from "../helpers/wait-until.js";

const RUN_JS = fileURLToPath(new URL("../../bench/run.js", import.meta.url));
const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

test("the benchmark suite runs every mode at tiny sizes and writes exact results and charts", { timeout: 300_000 }, async (t) => {
  const dir = tempDir(t);
  const out = join(dir, "results");
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [
      RUN_JS, "--k", "1,2", "--seconds", "0.5", "--warmup-calls", "20", "--reps", "1", "--messages", "1000", "--read-seconds", "0.05", "--read-warmup-seconds", "0.05",
      "--wal-seconds", "0.5", "--idle-seconds", "0", "--out", out, "--cache-dir", join(dir, "cache"), "--work-dir", join(dir, "work"),
    ],
    { maxBuffer: 16 * 1024 * 1024 },
  );
  assert.match(stdout, /### Convoy/);

  const files = readdirSync(out);
  const jsonFiles = files.filter((f) => f.endsWith(".json"));
  assert.equal(jsonFiles.length, 1, `one results file, got ${files.join(", ")}`);
  const result = JSON.parse(readFileSync(join(out, jsonFiles[0]!), "utf8")) as BenchResult;
  assert.equal(result.idle, null, "--idle-seconds 0 leaves the idle footprint out (the test below runs it)");

  const skipped = new Set(result.convoy.skipped.map((s) => s.mode));
  for (const mode of CONVOY_MODES.filter((m) => !skipped.has(m))) {
    const runs = result.convoy.runs.filter((r) => r.mode === mode);
    assert.ok(runs.length > 0, `${mode} ran`);
    for (const run of runs) {
      assert.ok(run.latencyMs.count > 0, `${mode} K=${run.k} made calls during the run`);
      if (MODES[mode].operation === "append") assert.ok(run.rows.expected > 0, `${mode} K=${run.k} has acknowledged appends to check`);
      else assert.equal(run.rows.expected, 0, `${mode} K=${run.k} appends nothing`);
      assert.deepEqual(run.rows.mismatches, [], `${mode} K=${run.k}: every acknowledged append is in the file, no more`);
      assert.equal(run.rows.found, run.rows.expected);
      if (process.platform === "linux") {
        const { clientsWaitShare, daemonWaitShare } = run.cpu;
        assert.ok(clientsWaitShare !== null && clientsWaitShare >= 0 && clientsWaitShare <= 1, `${mode} K=${run.k}: the clients' wait for a core is a share`);
        if (MODES[mode].daemon) assert.ok(daemonWaitShare !== null && daemonWaitShare >= 0 && daemonWaitShare <= 1, `${mode} K=${run.k}: the daemon's wait for a core is a share`);
        else assert.equal(daemonWaitShare, null, `${mode} K=${run.k} has no daemon`);
      }
    }
  }
  assert.deepEqual([...skipped].filter((m) => m !== "python-jitter" && m !== "python-daemon"), [], "only the Python modes may be skipped (no python3, or no msgpack)");
  assert.ok(result.convoy.ratios.some((r) => r.throughput !== null), "daemon/jitter ratios were computed");
  assert.ok(result.convoy.ratios.some((r) => r.pingThroughput !== null && r.appendsVsPing !== null), "the ratios to daemon-ping were computed");

  assert.deepEqual(result.convoy.fsyncDelaysMs, [0, 1], "the quick suite runs at the disk's own fsync and at +1 ms");
  for (const delay of [0, 1]) {
    assert.ok(result.convoy.runs.some((r) => r.fsyncDelayMs === delay && r.mode === "daemon"), `daemon ran at fsync +${delay} ms`);
    assert.ok(result.convoy.ratios.some((r) => r.fsyncDelayMs === delay && r.throughput !== null), `ratios at fsync +${delay} ms`);
  }
  for (const run of result.convoy.runs.filter((r) => r.fsyncDelayMs === 1)) {
    // Every commit waits for an fsync, so with the delay in every process none is quicker than 1 ms.
    if (run.daemon !== null) assert.ok(run.daemon.commitMs.p50 >= 1, `${run.mode} K=${run.k}: the daemon's commits took the delay`);
    if (run.mode === "jitter" || run.mode === "python-jitter") assert.ok(run.latencyMs.p50 >= 1, `${run.mode} K=${run.k}: its clients' commits took the delay`);
  }
  for (const cell of result.convoy.summary) {
    assert.ok(cell.cpuUsPerAppend !== null && cell.cpuUsPerAppend.median > 0, `${cell.mode} K=${cell.k}: CPU µs per append`);
  }
  assert.match(stdout, /cpu µs\/append/);
  // Issue 27's split: the clients' part, the daemon's, and the daemon's writer thread found by its name.
  for (const cell of result.convoy.summary.filter((c) => c.mode === "daemon")) {
    assert.ok((cell.clientsUsPerAppend?.median ?? 0) > 0 && (cell.daemonUsPerAppend?.median ?? 0) > 0, `daemon K=${cell.k}: clients' and daemon's CPU per append`);
    assert.ok((cell.daemonThreadsUsPerAppend?.writer?.median ?? 0) > 0, `daemon K=${cell.k}: the writer thread's CPU per append`);
  }
  assert.match(stdout, /### CPU per append: clients, daemon, the daemon's threads/);
  assert.deepEqual(result.convoy.loneAppend.map((l) => l.fsyncDelayMs), [0, 1], "a lone append's breakdown per fsync cost");
  for (const l of result.convoy.loneAppend) {
    assert.ok(l.commitMs !== null && l.roundTripMs !== null && l.sqlMs !== null && l.hopsMs !== null, `fsync +${l.fsyncDelayMs}: every part`);
    if (l.fsyncDelayMs === 1) assert.ok(l.commitMs.median >= 1, "the delayed fsync shows in the COMMIT part");
  }
  assert.match(stdout, /### Where a lone append's time goes/);
  assert.match(stdout, /\| \+1 ms +\| daemon/);

  const read = result.read?.sizes[0];
  assert.ok(read !== undefined, "the read side ran");
  assert.equal(read.latencies.length, READ_OPS.length * 4, "every read operation, idle and writing, direct and daemon");
  assert.equal(read.exports.length, 4);
  for (const e of read.exports) assert.ok(e.messages >= 1000, `exportAll ${e.via} ${e.load} exported the whole corpus`);
  assert.deepEqual(result.wal?.series.map((s) => s.via).sort(), ["daemon", "direct"]);
  for (const s of result.wal!.series) assert.ok(s.samples.length >= 2, `WAL sampled via ${s.via}`);

  const stem = jsonFiles[0]!.replace(/\.json$/, "");
  for (const chart of ["throughput", "latency", "histogram", "wal"]) {
    const svg = readFileSync(join(out, `${stem}-${chart}.svg`), "utf8");
    assert.match(svg, /^<svg[\s\S]*<\/svg>\s*$/, `${chart}.svg is an SVG document`);
    const png = readFileSync(join(out, `${stem}-${chart}.png`));
    assert.ok(png.subarray(0, 8).equals(PNG_SIGNATURE) && png.length > 1000, `${chart}.png is a PNG image`);
  }
});

/** A child that fsyncs a file and commits to SQLite, printing the quickest fsync (ms) as JSON. */
const NODE_FSYNCER = `
const fs = require("node:fs");
const Database = require(process.argv[1]);
const fd = fs.openSync(process.argv[2] + ".bin", "w");
let quickest = Infinity;
for (let i = 0; i < 4; i++) {
  fs.writeSync(fd, "x");
  const t0 = performance.now();
  fs.fsyncSync(fd);
  fs.fdatasyncSync(fd);
  quickest = Math.min(quickest, performance.now() - t0);
}
fs.closeSync(fd);
const db = new Database(process.argv[2] + ".db");
db.pragma("journal_mode = WAL");
db.pragma("synchronous = FULL");
db.exec("CREATE TABLE t (x)");
for (let i = 0; i < 3; i++) db.prepare("INSERT INTO t VALUES (?)").run(i);
db.close();
console.log(JSON.stringify({ pid: process.pid, quickest }));
`;

const PYTHON_FSYNCER = `
import json, os, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT)
quickest = float("inf")
for _ in range(3):
    os.write(fd, b"x")
    t0 = time.perf_counter()
    os.fsync(fd)
    quickest = min(quickest, (time.perf_counter() - t0) * 1000)
print(json.dumps({"pid": os.getpid(), "quickest": quickest}))
`;

/** "<pid> <delayed calls>" lines the library wrote, by pid. */
function delayedCalls(reportFile: string): Map<number, number> {
  if (!existsSync(reportFile)) return new Map();
  const lines = readFileSync(reportFile, "utf8").trim().split("\n").filter((l) => l !== "");
  return new Map(lines.map((l) => l.split(" ").map(Number) as [number, number]));
}

test("the slow-disk library delays every fsync and fdatasync of the processes it is preloaded into", async (t) => {
  const dir = tempDir(t);
  const library = buildFsyncDelayLibrary(join(dir, "cache"));
  const reportFile = join(dir, "delayed.txt");
  const delayMs = 5;
  const env = { ...process.env, ...fsyncDelayEnv(library, delayMs, reportFile) };
  const betterSqlite3 = fileURLToPath(new URL("../../../node_modules/better-sqlite3/lib/index.js", import.meta.url));

  const node = spawnSync(process.execPath, ["-e", NODE_FSYNCER, betterSqlite3, join(dir, "node")], { env, encoding: "utf8" });
  assert.equal(node.status, 0, node.stderr);
  const nodeChild = JSON.parse(node.stdout) as { pid: number; quickest: number };
  assert.ok(nodeChild.quickest >= 2 * delayMs, `an fsync + fdatasync pair took ${nodeChild.quickest} ms, at least twice the delay`);
  // 8 calls of its own, and SQLite's syncs of the WAL for its commits.
  assert.ok((delayedCalls(reportFile).get(nodeChild.pid) ?? 0) > 8, "SQLite's own syncs were delayed too");

  const python = spawnSync("python3", ["-c", PYTHON_FSYNCER, join(dir, "python.bin")], { env, encoding: "utf8" });
  if (python.error === undefined) {
    assert.equal(python.status, 0, python.stderr);
    const pythonChild = JSON.parse(python.stdout) as { pid: number; quickest: number };
    assert.ok(pythonChild.quickest >= delayMs, `a Python fsync took ${pythonChild.quickest} ms`);
    assert.equal(delayedCalls(reportFile).get(pythonChild.pid), 3);
  }

  const plain = spawnSync(process.execPath, ["-e", NODE_FSYNCER, betterSqlite3, join(dir, "plain")], { encoding: "utf8" });
  assert.equal(plain.status, 0, plain.stderr);
  const plainChild = JSON.parse(plain.stdout) as { pid: number };
  assert.equal(delayedCalls(reportFile).has(plainChild.pid), false, "a process without the library is not delayed");
});

test("a benchmark child that ends before it is ready is reported at once, with what it printed on stderr", async (t) => {
  const script = join(tempDir(t), "dies.mjs");
  writeFileSync(script, 'process.stderr.write("no sessiondb module here\\n"); process.exit(3);\n');
  const child = BenchChild.node(script, {});
  await assert.rejects(child.ready(), /exited before it was ready:\nno sessiondb module here/);
});

test("a slow-disk run on a machine without a C compiler stops with a clear error before any run", (t) => {
  const dir = tempDir(t);
  const noCompiler = join(dir, "bin"); // an empty directory as the whole PATH: no cc to be found
  mkdirSync(noCompiler);
  const out = join(dir, "results");
  const args = [RUN_JS, "--k", "1", "--modes", "jitter", "--seconds", "1", "--warmup-calls", "20", "--messages", "0", "--fsync-delay-ms", "0,1"];
  const run = spawnSync(process.execPath, [...args, "--cache-dir", join(dir, "cache"), "--out", out], {
    env: { ...process.env, PATH: noCompiler },
    encoding: "utf8",
  });
  assert.equal(run.status, 2, run.stderr);
  assert.match(run.stderr, /--fsync-delay-ms needs a C compiler to build .*fsync-delay\.c, and "cc" could not be run/);
  assert.match(run.stderr, /or run with --fsync-delay-ms 0/);
  assert.equal(existsSync(out), false, "no run was made, so no results were written");
});

/** The processes whose parent is `pid`, with their command lines. */
function childrenOf(pid: number): Map<number, string> {
  const children = new Map<number, string>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      if (Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) === pid) {
        children.set(Number(entry), readFileSync(`/proc/${entry}/cmdline`, "utf8"));
      }
    } catch {
      // ended meanwhile
    }
  }
  return children;
}

/** The command line of a running process; null once it ended (a zombie not yet reaped has ended). */
function commandLineOf(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    if (stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z")) return null;
    return readFileSync(`/proc/${pid}/cmdline`, "utf8");
  } catch {
    return null;
  }
}

for (const [signal, code] of [["SIGINT", 130], ["SIGTERM", 143]] as const) {
  test(`a bench interrupted by ${signal} stops its processes and its PostgreSQL server and removes its files`, { skip: process.platform !== "linux" }, async (t) => {
    const dir = tempDir(t);
    // Every mode that starts something: sessiondb daemons, client processes, a PostgreSQL server.
    const args = [RUN_JS, "--k", "2", "--modes", "daemon,pg-daemon", "--seconds", "60", "--warmup-calls", "20", "--messages", "0", "--fsync-delay-ms", "0"];
    const bench = spawn(process.execPath, [...args, "--cache-dir", join(dir, "cache"), "--out", join(dir, "results")], { stdio: ["ignore", "ignore", "pipe"] });
    // Should the test fail half-way, the bench still cleans up after itself (what this test checks).
    t.after(() => bench.kill("SIGTERM"));
    let log = "";
    bench.stderr.setEncoding("utf8").on("data", (chunk: string) => (log += chunk));
    const exited = new Promise<number | null>((resolve) => bench.once("exit", (status) => resolve(status)));

    await waitUntil("the bench's PostgreSQL server and its first convoy run", () => /a PostgreSQL server in \S+/.test(log) && childrenOf(bench.pid!).size >= 3);
    const workDir = /fsync in (\S+):/.exec(log)![1]!;
    const pgRoot = /a PostgreSQL server in (\S+)/.exec(log)![1]!;
    const children = childrenOf(bench.pid!);
    const postmaster = Number(readFileSync(join(pgRoot, "data", "postmaster.pid"), "utf8").split("\n")[0]);
    assert.ok(existsSync(workDir) && commandLineOf(postmaster) !== null);

    bench.kill(signal);
    assert.equal(await exited, code);
    assert.match(log, new RegExp(`${signal}: stopping the bench's processes`));
    for (const [pid, commandLine] of children) assert.notEqual(commandLineOf(pid), commandLine, `the bench's child ${pid} (${commandLine.replaceAll("\0", " ")}) was stopped`);
    assert.equal(commandLineOf(postmaster), null, "the PostgreSQL server was stopped");
    assert.equal(existsSync(pgRoot), false, "the PostgreSQL server's folder was removed");
    assert.equal(existsSync(workDir), false, "the work directory was removed");
  });
}

test("bench --idle-only measures the idle daemon alone and writes its own results file", { timeout: 120_000 }, async (t) => {
  const dir = tempDir(t);
  const out = join(dir, "results");
  const { stdout } = await promisify(execFile)(process.execPath, [
    RUN_JS, "--idle-only", "--idle-settle-seconds", "0.3", "--idle-seconds", "0.3", "--soak-seconds", "0.5", "--cold-reads", "2", "--out", out,
    "--work-dir", join(dir, "work"),
  ]);
  assert.match(stdout, /## sessiondb idle footprint/);
  assert.match(stdout, /\| fresh \| [\d.]+ \|/);
  const files = readdirSync(out);
  assert.equal(files.length, 1, files.join(", "));
  assert.match(files[0]!, /-idle\.json$/);
  const { idle } = JSON.parse(readFileSync(join(out, files[0]!), "utf8")) as IdleOnlyResult;
  for (const w of [idle.fresh, idle.afterUse]) assert.ok(w.sample.rssKb > 0 && w.sample.threads > 0 && w.wakeupsPerS >= 0, "the idle daemon measured");
  assert.ok(idle.soak !== null && idle.soak.samples.length >= 2, "the idle daemon soaked");
  assert.equal(idle.firstReadMs.cold.count, 2);
  assert.equal(idle.firstWriteMs.cold.count, 2);
  assert.equal(idle.firstWriteMs.warm.count, 6);
});

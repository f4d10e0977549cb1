/**
 * The benchmark suite at tiny sizes, so its code cannot rot: every convoy mode (the PostgreSQL
 * ones on a throwaway server of their own), the read side
 * and the WAL check run for a moment through the real `bench/run.js`, and must produce the
 * results JSON and the charts with no lost append in any mode.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import type { BenchResult } from "../bench/bench-result.js";
import { CONVOY_MODES, MODES } from "../bench/modes.js";
import { READ_OPS } from "../bench/read-side.js";
import { tempDir } from "./helpers/temp-dir.js";

const RUN_JS = fileURLToPath(new URL("../bench/run.js", import.meta.url));
const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

test("the benchmark suite runs every mode at tiny sizes and writes exact results and charts", { timeout: 300_000 }, async (t) => {
  const dir = tempDir(t);
  const out = join(dir, "results");
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [
      RUN_JS, "--k", "1,2", "--seconds", "0.5", "--reps", "1", "--messages", "1000", "--read-seconds", "0.05",
      "--wal-seconds", "0.5", "--out", out, "--cache-dir", join(dir, "cache"), "--work-dir", join(dir, "work"),
    ],
    { maxBuffer: 16 * 1024 * 1024 },
  );
  assert.match(stdout, /### Convoy/);

  const files = readdirSync(out);
  const jsonFiles = files.filter((f) => f.endsWith(".json"));
  assert.equal(jsonFiles.length, 1, `one results file, got ${files.join(", ")}`);
  const result = JSON.parse(readFileSync(join(out, jsonFiles[0]!), "utf8")) as BenchResult;

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
  assert.deepEqual([...skipped].filter((m) => m !== "python-jitter"), [], "only python-jitter may be skipped (no python3)");
  assert.ok(result.convoy.ratios.some((r) => r.throughput !== null), "daemon/jitter ratios were computed");
  assert.ok(result.convoy.ratios.some((r) => r.pingThroughput !== null && r.appendsVsPing !== null), "the ratios to daemon-ping were computed");

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

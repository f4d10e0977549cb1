/**
 * The bench's target checks (bench/targets.ts) on hand-made medians: which runs each target reads,
 * and where its bound falls (issue 15's "at least" and "at most" include the bound).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { ConvoyResult } from "../../bench/convoy.js";
import type { IdleFootprintResult } from "../../bench/idle-footprint.js";
import type { ReadSideResult } from "../../bench/read-side.js";
import { checkTargets, type TargetCheck } from "../../bench/targets.js";

const one = (median: number) => ({ median, min: median, max: median, n: 1 });

interface Cell {
  k: number;
  delay: number;
  ratio: number;
  p99?: number;
  fairness?: number | null;
}

function convoy(cells: Cell[], delays: number[]): ConvoyResult {
  const partial = {
    fsyncDelaysMs: delays,
    pipelinedVsCeiling: null,
    summary: cells.map((c) => ({
      mode: "daemon", k: c.k, fsyncDelayMs: c.delay, failures: 0,
      p99: one(c.p99 ?? 1), max: one(10), fairness: c.fairness === null ? null : one(c.fairness ?? 1),
    })),
    ratios: cells.map((c) => ({ k: c.k, fsyncDelayMs: c.delay, throughput: one(c.ratio) })),
  };
  // Only the fields checkTargets reads.
  return partial as unknown as ConvoyResult;
}

function find(checks: TargetCheck[], issue: number, target: string, k: number | null, delay: number | null): TargetCheck {
  const check = checks.find((c) => c.issue === issue && c.target === target && c.k === k && c.fsyncDelayMs === delay);
  assert.ok(check, `no check "${target}" (issue ${issue}, K ${k}, fsync +${delay})`);
  return check;
}

test("issue 15's convoy targets: per fsync delay, bounds included, the lone client at K = 1", () => {
  const checks = checkTargets(
    convoy(
      [
        { k: 1, delay: 0, ratio: 0.25 },
        { k: 16, delay: 0, ratio: 2, p99: 20.5, fairness: 0.9 },
        { k: 32, delay: 0, ratio: 1.36, p99: 40, fairness: 0.87 },
        { k: 1, delay: 1, ratio: 0.9 },
        { k: 16, delay: 1, ratio: 4.99, p99: 12, fairness: null },
        { k: 32, delay: 1, ratio: 5, p99: 41, fairness: 0.95 },
      ],
      [0, 1],
    ),
  );
  const met = (target: string, k: number | null, delay: number) => find(checks, 15, target, k, delay).met;
  assert.equal(met("lone client: daemon/jitter appends", 1, 0), false);
  assert.equal(met("lone client: daemon/jitter appends", 1, 1), true);
  assert.equal(met("daemon/jitter throughput", 16, 0), true);
  assert.equal(met("daemon/jitter throughput", 32, 0), false);
  assert.equal(met("daemon/jitter throughput", 16, 1), false);
  assert.equal(met("daemon/jitter throughput", 32, 1), true);
  assert.equal(met("daemon p99 (ms)", 16, 0), false);
  assert.equal(met("daemon p99 (ms)", 32, 0), true);
  assert.equal(met("daemon p99 (ms)", 32, 1), false);
  assert.equal(met("daemon fairness", 16, 0), true);
  assert.equal(met("daemon fairness", 32, 0), false);
  assert.equal(met("daemon fairness", 16, 1), false, "an unknown value never meets a target");
  // Issue 3's stay on the first delay, with their own bounds.
  assert.equal(find(checks, 3, "daemon/jitter throughput", 16, 0).met, false);
  assert.equal(find(checks, 3, "daemon p99 (ms)", 32, 0).met, false, "issue 3's p99 bound is strict and 20 ms");
  assert.equal(checks.some((c) => c.issue === 3 && c.fsyncDelayMs === 1), false);
});

test("issue 15's targets are checked only for the fsync delays and K that ran", () => {
  const checks = checkTargets(convoy([{ k: 16, delay: 3, ratio: 6, p99: 10, fairness: 1 }], [3]));
  assert.deepEqual(checks.filter((c) => c.issue === 15), []);
});

test("the CJK target reads the idle CJK search at 1,000,000 messages, each way it was served", () => {
  const latency = (via: string, load: string, op: string, p99: number) => ({ via, load, op, query: "数据库", n: 100, p50: 1, p99, max: p99, rows: 20 });
  const read = {
    opSeconds: 1,
    sizes: [
      { corpus: { messages: 200_000 }, latencies: [latency("direct", "idle", "search-cjk", 1)] },
      {
        corpus: { messages: 1_000_000 },
        latencies: [
          latency("direct", "idle", "search-cjk", 2),
          latency("daemon", "idle", "search-cjk", 8.07),
          latency("daemon", "writing", "search-cjk", 1),
          latency("direct", "idle", "search-rare", 1),
        ],
      },
    ],
  } as unknown as ReadSideResult;
  const cjk = checkTargets(convoy([], [0]), read).filter((c) => c.target.startsWith("CJK search"));
  assert.deepEqual(
    cjk.map((c) => [c.target, c.value, c.met]),
    [
      ["CJK search p99 (ms) at 1,000,000 messages, direct", 2, true],
      ["CJK search p99 (ms) at 1,000,000 messages, daemon", 8.07, false],
    ],
  );
  assert.deepEqual(checkTargets(convoy([], [0]), null), []);
});

test("issue 27's targets: the daemon's and the clients' CPU per append at K = 16, the lone client, +1 ms at K = 16 and 32, idle wake-ups, reads through the daemon", () => {
  const base = convoy(
    [
      { k: 1, delay: 0, ratio: 0.6 },
      { k: 16, delay: 0, ratio: 2.1, p99: 20 },
      { k: 16, delay: 1, ratio: 5, p99: 30.5 },
      { k: 32, delay: 1, ratio: 4.9, p99: 25 },
    ],
    [0, 1],
  );
  const native16 = base.summary.find((c) => c.k === 16 && c.fsyncDelayMs === 0)!;
  Object.assign(native16, { daemonUsPerAppend: one(200), clientsUsPerAppend: one(251) });
  const latency = (op: string, via: string, p99: number) => ({ via, load: "idle", op, query: null, n: 100, p50: 1, p99, max: p99, rows: 50 });
  const read = {
    opSeconds: 1,
    sizes: [
      { corpus: { messages: 20_000 }, latencies: [latency("search-rare", "daemon", 2.5), latency("search-rare", "direct", 0.4), latency("list-rich-50", "daemon", 5)] },
      { corpus: { messages: 2_000_000 }, latencies: [latency("list-rich-50", "daemon", 4)] },
    ],
  } as unknown as ReadSideResult;
  const idle = { fresh: { wakeupsPerS: 0.4 }, afterUse: { wakeupsPerS: 1.2 } } as unknown as IdleFootprintResult;
  const checks = checkTargets(base, read, idle);
  const met = (target: string, k: number | null, delay: number | null) => find(checks, 27, target, k, delay).met;
  assert.equal(met("daemon process CPU µs per append", 16, 0), true, "the bound is included");
  assert.equal(met("TypeScript clients' CPU µs per append", 16, 0), false);
  assert.equal(met("lone client: daemon/jitter appends", 1, 0), true);
  assert.equal(met("daemon/jitter throughput", 16, 0), true);
  assert.equal(met("daemon p99 (ms)", 16, 0), true);
  assert.equal(met("daemon/jitter throughput", 16, 1), true);
  assert.equal(met("daemon p99 (ms)", 16, 1), false);
  assert.equal(met("daemon/jitter throughput", 32, 1), false);
  assert.equal(met("daemon p99 (ms)", 32, 1), true);
  const wakeups = find(checks, 27, "idle daemon wake-ups per second", null, null);
  assert.deepEqual([wakeups.value, wakeups.met], [1.2, false], "the worse of the two quiet spells");
  assert.equal(met("search-rare p99 (ms) at 20,000 messages, daemon", null, null), false);
  assert.equal(met("list-rich-50 p99 (ms) at 20,000 messages, daemon", null, null), true);
  assert.equal(met("list-rich-50 p99 (ms) at 2,000,000 messages, daemon", null, null), true);
  assert.equal(checks.some((c) => c.issue === 27 && c.k === 32 && c.fsyncDelayMs === 0), false, "K = 32 is a target with fsync +1 ms only");
});

/**
 * Daemon memory over time: with the default reader pool, two rounds of writes and searches from
 * client processes; RSS is reported after each and must not grow from the first to the second.
 * Full size (100,000 writes and 10,000 searches a round) in a local run, a fifth of it in CI.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { daemonStats, shortTempDir } from "../helpers/daemon.js";
import { waitUntil } from "../helpers/wait-until.js";
import { checkFile, loadReport, mib, rssBytes, scaled, serve, spawnLoad } from "./harness.js";

const WRITES = scaled(20_000, 100_000);
const SEARCHES = scaled(2_000, 10_000);
const CLIENTS = 2;
/** A bound for a client that hangs, not a speed target: a round has taken 135 s on a saturated machine. */
const ROUND_LIMIT_MS = 1_200_000;

test(`daemon RSS after two rounds of ${WRITES} writes and ${SEARCHES} searches does not grow`, async (t) => {
  const dbPath = join(shortTempDir(t), "state.db");
  // The default reader pool, kept for the whole test: on a slow machine one kind of client can
  // finish 5 s before the other, the pool then shrinks to zero and grows again, and threads
  // started anew are another figure (the bench's idle footprint measures that).
  const daemon = await serve(t, dbPath, { readerIdleSeconds: 600 });
  const control = await daemon.open(t);
  const rssStart = rssBytes(daemon.pid);
  const rounds: Array<{ rss: number; heapUsed: number; external: number; ms: number }> = [];
  for (let round = 0; round < 2; round++) {
    const started = Date.now();
    const perClient = { writes: WRITES / CLIENTS, searches: SEARCHES / CLIENTS };
    const writers = Array.from({ length: CLIENTS }, (_, i) =>
      spawnLoad(t, { db: dbPath, mode: "daemon", session: `m${round}-${i}`, tag: `m${round}w${i}`, pipeline: 64, count: perClient.writes, report: "counts" }),
    );
    const searchers = Array.from({ length: CLIENTS }, (_, i) =>
      spawnLoad(t, {
        db: dbPath, mode: "daemon", op: "search", session: "-", tag: `m${round}s${i}`, pipeline: 4, count: perClient.searches,
        queryRange: perClient.writes * (round + 1), report: "counts",
      }),
    );
    // The clients stop at their count, however long that takes (no time limit cuts a round short).
    const reports = await Promise.all([...writers, ...searchers].map((c) => loadReport(c, ROUND_LIMIT_MS)));
    for (const [k, r] of reports.entries()) {
      assert.deepEqual(r.failureCodes, {});
      assert.equal(r.sent, k < CLIENTS ? perClient.writes : perClient.searches, "a client stopped before its count");
      assert.equal(r.ackCount, r.sent);
    }
    const ms = Date.now() - started;
    // The round is over on the daemon's side too: its clients' connections closed, no read running.
    await waitUntil("the round's connections closed and its reads done", async () => {
      const { clients, readers } = await daemonStats(control);
      return clients <= 1 && readers.inFlight === 0 && readers.queued === 0;
    });
    // The least of a few samples over a second (a measuring window, not a wait): RSS once the
    // round's garbage is collected.
    let rss = Number.POSITIVE_INFINITY;
    for (let i = 0; i < 5; i++) {
      await sleep(200);
      rss = Math.min(rss, rssBytes(daemon.pid));
    }
    const { memory } = await daemonStats(control);
    rounds.push({ rss, heapUsed: memory.heapUsed, external: memory.external, ms });
  }
  const stats = await daemonStats(control);
  const [first, second] = rounds as [(typeof rounds)[0], (typeof rounds)[0]];
  const figures = rounds
    .map((r, i) => `round ${i + 1} (${(r.ms / 1000).toFixed(1)} s): RSS ${mib(r.rss)}, main heap ${mib(r.heapUsed)}, external ${mib(r.external)}`)
    .join("; ");
  t.diagnostic(`memory, ${stats.readers.threads} readers: RSS ${mib(rssStart)} at start; ${figures}`);
  // Not growing: the second round ends where the first did, give or take allocator and GC noise.
  assert.ok(second.rss < first.rss * 1.1 + 24 * 1048576, `RSS grew from ${mib(first.rss)} to ${mib(second.rss)}`);
  assert.equal(stats.writer.writes, 2 * (WRITES + CLIENTS), "each round: the writes and one ensureSession per writer client");
  const stopped = await daemon.stop();
  assert.equal(stopped.code, 0, stopped.stderr);
  assert.equal(checkFile(dbPath).messages, 2 * WRITES);
});

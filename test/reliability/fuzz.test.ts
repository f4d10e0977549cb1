/**
 * Protocol fuzzing (SPEC §6) against a real daemon: more than 10,000 random and mutated frames —
 * bad lengths, truncated frames, wrong types, deep nesting, huge declared lengths, extension
 * types, unknown ops, `__proto__` keys — from many connections, while a well-behaved client
 * process keeps writing. The daemon never crashes, its memory stays bounded, the good client
 * sees no error, and every bad connection is answered with an error or closed.
 */
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { test } from "node:test";
import type { DaemonStats } from "../../src/protocol/control.js";
import { daemonStats, freshDbPath } from "../helpers/daemon.js";
import { RawConnection } from "../helpers/raw-connection.js";
import { waitUntil } from "../helpers/wait-until.js";
import { fuzz, type FuzzRun } from "./fuzz-client.js";
import { Rng } from "./fuzz-frames.js";
import { checkFile, fdCount, loadReport, mib, reconcile, rssBytes, scaled, serve, spawnLoad } from "./harness.js";

const FRAMES = scaled(12_000, 30_000);
const ROUNDS = 4;
const CONCURRENCY = 48;

test(`${FRAMES} random and mutated frames from many connections: the daemon survives, stays bounded, the good client sees no error`, async (t) => {
  const dbPath = freshDbPath(t);
  const daemon = await serve(t, dbPath, { readers: 2 });
  const stopFile = join(dirname(dbPath), "stop");
  // Paced, so the file stays small and the memory figures are about the fuzz, not a growing database.
  const good = spawnLoad(t, { db: dbPath, mode: "daemon", session: "good", tag: "good", pipeline: 4, delayMs: 2, stopFile, durationMs: 300_000 });
  await good.waitForLine("ready");
  const control = await daemon.open(t);

  const seed = Number(process.env.SESSIONDB_FUZZ_SEED ?? Date.now() % 2 ** 31);
  t.diagnostic(`fuzz seed ${seed} (replay with SESSIONDB_FUZZ_SEED=${seed})`);
  const rng = new Rng(seed);
  // After each round the daemon is left with the good client and this one: RSS is read once it has
  // closed the round's connections on its side.
  const steadyClients = (await daemonStats(control)).clients;
  const roundClosed = () => waitUntil(`the daemon back to its ${steadyClients} connections after a fuzz round`, async () => (await daemonStats(control)).clients <= steadyClients);
  // A first small round warms everything up, so RSS is compared between like states.
  const warmUp = await fuzz(daemon.socketPath, rng, 500, CONCURRENCY);
  await roundClosed();
  const baseline = { rss: rssBytes(daemon.pid), fds: fdCount(daemon.pid), clients: (await daemonStats(control)).clients };

  const rounds: FuzzRun[] = [];
  const memory: Array<DaemonStats["memory"]> = [];
  for (let round = 0; round < ROUNDS; round++) {
    rounds.push(await fuzz(daemon.socketPath, rng, FRAMES / ROUNDS, CONCURRENCY));
    await roundClosed();
    memory.push((await daemonStats(control)).memory);
  }
  // The first half's end: after one round of four the daemon's heaps and allocator arenas are
  // still filling (under load more slowly), which is not a leak.
  const rssMid = memory[ROUNDS / 2 - 1]!.rss;
  const rssAfter = rssBytes(daemon.pid);
  t.diagnostic(`memory after each round: ${memory.map((m) => `rss ${mib(m.rss)} heap ${mib(m.heapUsed)} external ${mib(m.external)}`).join("; ")}`);

  writeFileSync(stopFile, "");
  const report = await loadReport(good);
  const problems = [warmUp, ...rounds].flatMap((r) => r.problems);
  assert.deepEqual(problems.slice(0, 20), [], `${problems.length} connections misbehaved`);

  // Alive, same process, no connection left behind, nothing polluted.
  const stats = await daemonStats(control);
  assert.equal(stats.pid, daemon.pid);
  // Closed connections go on the daemon's own time: waited for (a leak never comes back down).
  let fdsAfter = fdCount(daemon.pid);
  await waitUntil(`daemon fds back from ${fdsAfter} to ${baseline.fds} + 1`, () => (fdsAfter = fdCount(daemon.pid)) <= baseline.fds + 1);
  // The good client has gone too.
  await waitUntil(`fewer than the ${baseline.clients} connections before (with the good client)`, async () => (await daemonStats(control)).clients < baseline.clients);
  const raw = await RawConnection.open(t, daemon.socketPath);
  raw.send({ id: 1, op: "ping" }, { id: 2, op: "getSession", args: ["nobody"] }, { id: 3, op: "listSessionsRich", args: [{}] });
  const canaries = [await raw.next(), await raw.next(), await raw.next()].sort((a, b) => a.id - b.id);
  assert.deepEqual(canaries.map((r) => r.ok), [true, true, true], JSON.stringify(canaries));
  assert.equal(canaries[0]!.result, "pong");
  assert.equal(({} as Record<string, unknown>).polluted, undefined);

  // The good client: every write acknowledged, none failed, all in the file.
  assert.deepEqual(report.failureCodes, {});
  assert.ok(report.ackCount > 100, `the good client got only ${report.ackCount} writes through`);
  assert.deepEqual(reconcile(dbPath, [{ tag: "good", report }], []).problems, []);

  // Memory: bounded, and not growing from one half of the fuzz to the other.
  assert.ok(rssAfter - baseline.rss < 96 * 1048576, `RSS grew from ${mib(baseline.rss)} to ${mib(rssAfter)}`);
  assert.ok(rssAfter - rssMid < 48 * 1048576, `RSS kept growing: ${mib(rssMid)} after the first half's rounds, ${mib(rssAfter)} after the last`);
  const stopped = await daemon.stop();
  assert.equal(stopped.code, 0, stopped.stderr);
  const check = checkFile(dbPath);
  assert.equal(check.integrity, "ok");
  assert.deepEqual(check.counterMismatches, []);
  const sent = rounds.reduce((n, r) => n + r.sent, 0);
  const connections = rounds.reduce((n, r) => n + r.connections, 0);
  const outcomes = rounds.map((r) => r.outcomes).reduce<Record<string, number>>((all, o) => {
    for (const [k, v] of Object.entries(o)) all[k] = (all[k] ?? 0) + v;
    return all;
  }, {});
  t.diagnostic(
    `fuzz: ${sent} frames on ${connections} connections (${JSON.stringify(outcomes)}), ${problems.length} problems; ` +
      `daemon RSS ${mib(baseline.rss)} before, ${mib(rssMid)} midway, ${mib(rssAfter)} after; fds ${baseline.fds} -> ${fdsAfter}; ` +
      `good client: ${report.ackCount} writes, 0 errors`,
  );
});

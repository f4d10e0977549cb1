/**
 * Another process holds the write lock for 10 s (a raw `BEGIN IMMEDIATE`, the reference's way of
 * writing): the daemon's queued writes wait and then succeed, requests past their deadline get
 * TIMEOUT and are never applied, reads go on meanwhile, and nothing is applied twice.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { SessionDBError } from "../../src/index.js";
import { daemonStats, freshDbPath } from "../helpers/daemon.js";
import { sourceFixture, spawnPython } from "../helpers/processes.js";
import { rawAll } from "../helpers/raw-db.js";
import { checkFile, loadReport, reconcile, serve, spawnLoad } from "./harness.js";

const HOLD_S = 10;
const HURRIED_TIMEOUT_MS = 2000;

test(`a write lock held ${HOLD_S} s by another process: queued writes wait and succeed, expired ones get TIMEOUT, none applied twice`, async (t) => {
  const dbPath = freshDbPath(t);
  const daemon = await serve(t, dbPath, { readers: 2 });
  const patient = await daemon.open(t, { requestTimeoutMs: 60_000 });
  const hurried = await daemon.open(t, { requestTimeoutMs: HURRIED_TIMEOUT_MS });
  await patient.createSession("patient", "cli");
  await patient.createSession("hurried", "cli");
  await patient.appendMessage("patient", { role: "user", content: "before the lock" });

  const holder = spawnPython(sourceFixture("hermes_writer.py"), ["hold", dbPath, String(HOLD_S)]);
  t.after(() => holder.kill());
  await holder.waitForLine("locked");
  const lockedAt = Date.now();

  const loader = spawnLoad(t, { db: dbPath, mode: "daemon", session: "loader", tag: "held", pipeline: 16, count: 200, requestTimeoutMs: 60_000 });
  const patientWrites = Array.from({ length: 30 }, (_, i) => patient.appendMessage("patient", { role: "user", content: `patient ${i}` }));
  // The writer is already waiting for the lock when the hurried writes arrive.
  for (let i = 0; i < 500 && (await daemonStats(patient)).writer.queueDepth < 30; i++) await sleep(10);
  const hurriedWrites = Array.from({ length: 30 }, (_, i) =>
    hurried.appendMessage("hurried", { role: "user", content: `hurried ${i}` }).then(
      () => null,
      (err: unknown) => err as SessionDBError,
    ),
  );

  // Reads are served while the lock is held.
  assert.equal((await patient.searchMessages("before")).length, 1);
  const timeouts = await Promise.all(hurriedWrites);
  const timedOutAfterMs = Date.now() - lockedAt;
  assert.ok(timedOutAfterMs < HOLD_S * 1000, "the expired writes were answered only when the lock came free");
  for (const err of timeouts) {
    assert.ok(err instanceof SessionDBError, "a write past its deadline succeeded");
    assert.equal(err.code, "TIMEOUT");
    assert.match(err.message, /deadline/, "the TIMEOUT did not come from the daemon");
  }
  const stats = await daemonStats(patient);
  assert.ok(stats.writer.queueDepth >= 30, `only ${stats.writer.queueDepth} writes queued behind the lock`);

  const ids = await Promise.all(patientWrites);
  const waitedMs = Date.now() - lockedAt;
  const report = await loadReport(loader);
  const held = await holder.done;
  assert.equal(held.code, 0, held.stderr);

  assert.equal(new Set(ids).size, 30);
  assert.deepEqual(report.failureCodes, {});
  assert.equal(report.ackCount, 200);
  const reconciled = reconcile(dbPath, [{ tag: "held", report }], []);
  assert.deepEqual(reconciled.problems, []);
  const counts = rawAll<{ content: string; n: number }>(
    dbPath,
    "SELECT content, COUNT(*) AS n FROM messages WHERE session_id IN ('patient', 'hurried', 'lock-holder') GROUP BY content ORDER BY content",
  );
  assert.deepEqual(
    counts.map((c) => c.content).sort(),
    ["before the lock", ...Array.from({ length: 30 }, (_, i) => `patient ${i}`), "written while holding the lock"].sort(),
  );
  assert.ok(counts.every((c) => c.n === 1), "a write was applied twice");
  const check = checkFile(dbPath);
  assert.equal(check.integrity, "ok");
  assert.deepEqual(check.counterMismatches, []);
  t.diagnostic(
    `lock held ${HOLD_S} s: 30 hurried writes TIMEOUT after ${timedOutAfterMs} ms (deadline ${HURRIED_TIMEOUT_MS} ms), none applied; ` +
      `30 patient writes + 200 pipelined from a child process committed after ${waitedMs} ms, each exactly once`,
  );
});

/**
 * Another process holds the write lock (a raw `BEGIN IMMEDIATE`, the reference's way of writing)
 * until the test lets it go: the daemon's queued writes wait and then succeed, requests past
 * their deadline get TIMEOUT (while the lock is still held) and are never applied, reads go on
 * meanwhile, and nothing is applied twice.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { SessionDBError } from "../../src/index.js";
import { daemonStats, freshDbPath, holdWriteLock } from "../helpers/daemon.js";
import { rawAll } from "../helpers/raw-db.js";
import { waitUntil } from "../helpers/wait-until.js";
import { checkFile, loadReport, reconcile, serve, spawnLoad } from "./harness.js";

const HURRIED_TIMEOUT_MS = 2000;
/** The patient writers' deadline: far beyond the hold, however slow the machine. */
const PATIENT_TIMEOUT_MS = 600_000;

test("a write lock held by another process: queued writes wait and succeed, expired ones get TIMEOUT, none applied twice", async (t) => {
  const dbPath = freshDbPath(t);
  const daemon = await serve(t, dbPath, { readers: 2 });
  const patient = await daemon.open(t, { requestTimeoutMs: PATIENT_TIMEOUT_MS });
  const hurried = await daemon.open(t, { requestTimeoutMs: HURRIED_TIMEOUT_MS });
  await patient.createSession("patient", "cli");
  await patient.createSession("hurried", "cli");
  await patient.appendMessage("patient", { role: "user", content: "before the lock" });

  const lock = await holdWriteLock(t, dbPath);
  const lockedAt = Date.now();

  const loader = spawnLoad(t, { db: dbPath, mode: "daemon", session: "loader", tag: "held", pipeline: 16, count: 200, requestTimeoutMs: PATIENT_TIMEOUT_MS });
  const patientWrites = Array.from({ length: 30 }, (_, i) => patient.appendMessage("patient", { role: "user", content: `patient ${i}` }));
  // The writer is already waiting for the lock when the hurried writes arrive.
  await waitUntil("30 writes queued behind the lock", async () => (await daemonStats(patient)).writer.queueDepth >= 30);
  const hurriedWrites = Array.from({ length: 30 }, (_, i) =>
    hurried.appendMessage("hurried", { role: "user", content: `hurried ${i}` }).then(
      () => null,
      (err: unknown) => err as SessionDBError,
    ),
  );

  // Reads are served while the lock is held.
  assert.equal((await patient.searchMessages("before")).length, 1);
  // Answered while the lock is still held: the lock comes free only after this.
  const timeouts = await Promise.all(hurriedWrites);
  const timedOutAfterMs = Date.now() - lockedAt;
  for (const err of timeouts) {
    assert.ok(err instanceof SessionDBError, "a write past its deadline succeeded");
    assert.equal(err.code, "TIMEOUT");
    assert.match(err.message, /deadline/, "the TIMEOUT did not come from the daemon");
  }
  const stats = await daemonStats(patient);
  assert.ok(stats.writer.queueDepth >= 30, `only ${stats.writer.queueDepth} writes queued behind the lock`);

  await lock.release();
  const ids = await Promise.all(patientWrites);
  const waitedMs = Date.now() - lockedAt;
  const report = await loadReport(loader);

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
    `lock held: 30 hurried writes TIMEOUT after ${timedOutAfterMs} ms (deadline ${HURRIED_TIMEOUT_MS} ms), none applied; ` +
      `30 patient writes + 200 pipelined from a child process committed after ${waitedMs} ms, each exactly once`,
  );
});

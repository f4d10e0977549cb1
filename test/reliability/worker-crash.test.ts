/**
 * Threads of the daemon dying under load (fault injection: `SESSIONDB_FAULT_INJECTION=1`). The
 * writer thread: its in-flight writes get INTERNAL and are not applied, it is restarted, and
 * nothing acknowledged is lost; dying between a COMMIT and its answer, that batch's writes get
 * OUTCOME_UNKNOWN (they are there), or with their idempotency keys are sent again and answered
 * their first result (each there once). A reader thread: the read it served fails with INTERNAL, the
 * pool replaces the thread, and every other read is answered correctly.
 */
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { SessionDBError } from "../../src/index.js";
import { controlOf, daemonStats, freshDbPath } from "../helpers/daemon.js";
import { rawAll } from "../helpers/raw-db.js";
import { waitUntil } from "../helpers/wait-until.js";
import { checkFile, FAULTS, loadReport, randomBetween, reconcile, scaled, serve, spawnLoad } from "./harness.js";

const WRITER_CRASHES = scaled(5, 10);
/** Only a bound for a client that never stops: the load clients end at the stop file. */
const CLIENT_LIMIT_MS = 600_000;

test(`the writer thread crashing ${WRITER_CRASHES} times under load: in-flight writes without keys get INTERNAL, nothing acknowledged is lost`, async (t) => {
  const dbPath = freshDbPath(t);
  const daemon = await serve(t, dbPath, { readers: 2, env: FAULTS });
  const control = await daemon.open(t);
  const stopFile = join(dirname(dbPath), "stop");
  const tags = ["w0", "w1"];
  const children = tags.map((tag) =>
    // Each goes on past the stop file until a write sent after its last failure is acknowledged.
    // Without keys: a keyed write in flight is sent to the new thread instead (the last test).
    spawnLoad(t, { db: dbPath, mode: "daemon", session: tag, tag, pipeline: 64, stopFile, untilRecovered: true, durationMs: CLIENT_LIMIT_MS, idempotencyKeys: false }),
  );
  await Promise.all(children.map((c) => c.waitForLine("ready")));

  for (let crash = 1; crash <= WRITER_CRASHES; crash++) {
    await sleep(randomBetween(100, 400));
    await controlOf(control).fault("faultCrashWriter");
    await waitUntil(`writer restart ${crash}`, async () => (await daemonStats(control)).writer.restarts >= crash);
  }
  writeFileSync(stopFile, "");
  const reports = await Promise.all(children.map((c) => loadReport(c)));

  const stats = await daemonStats(control);
  assert.equal(stats.writer.restarts, WRITER_CRASHES);
  assert.equal(stats.pid, daemon.pid);
  let internal = 0;
  for (const report of reports) {
    const codes = Object.keys(report.failureCodes);
    assert.ok(codes.every((c) => c === "INTERNAL"), `failures: ${JSON.stringify(report.failureCodes)}`);
    internal += report.failed.length;
    const lastFailure = Math.max(...report.failed.map(([seq]) => seq));
    assert.ok(report.acked.some(([seq]) => seq > lastFailure), "no write was acknowledged after the last crash");
  }
  assert.ok(internal > 0, "no write was in flight at any crash");
  assert.ok(internal <= WRITER_CRASHES * 2 * 64);

  // After a crash and restart, writes from a fresh connection still go through.
  assert.ok((await control.appendMessage("w0", { role: "user", content: "after the crashes" })) > 0);
  const reconciled = reconcile(dbPath, tags.map((tag, i) => ({ tag, report: reports[i]! })), ["INTERNAL"]);
  assert.deepEqual(reconciled.problems, []);
  const check = checkFile(dbPath);
  assert.equal(check.integrity, "ok");
  assert.deepEqual(check.counterMismatches, []);
  t.diagnostic(
    `writer crashed ${WRITER_CRASHES}x: ${reconciled.acked} acknowledged writes all present, ${internal} in-flight writes got INTERNAL and none of them was applied`,
  );
});

test("the writer thread dying after a COMMIT, before it answers: that batch's writes without keys get OUTCOME_UNKNOWN and are there, nothing failed INTERNAL is", async (t) => {
  const dbPath = freshDbPath(t);
  const daemon = await serve(t, dbPath, { readers: 2, env: FAULTS });
  const control = await daemon.open(t);
  const db = await daemon.open(t, { idempotencyKeys: false });
  await db.createSession("s", "cli");
  // A crash point the daemon does not know is refused (the wire carries whatever a client sends).
  const rawFault = controlOf(control).fault as (op: string, ...args: unknown[]) => Promise<void>;
  await assert.rejects(rawFault.call(controlOf(control), "faultCrashWriter", "later"), { code: "INVALID_ARGUMENT" });
  // The thread dies right after its next COMMIT: the one of the batch these writes go into.
  await controlOf(control).fault("faultCrashWriter", "afterCommit");
  const writes = 200;
  const outcomes = await Promise.allSettled(
    Array.from({ length: writes }, (_, i) => db.appendMessage("s", { role: "user", content: `write ${i}` })),
  );
  await waitUntil("the writer restart", async () => (await daemonStats(control)).writer.restarts >= 1);

  const stored = new Map(rawAll<{ id: number; content: string }>(dbPath, "SELECT id, content FROM messages").map((r) => [r.content, r.id]));
  const byCode: Record<string, number> = {};
  outcomes.forEach((outcome, i) => {
    const id = stored.get(`write ${i}`);
    if (outcome.status === "fulfilled") {
      assert.equal(id, outcome.value, `acknowledged write ${i} is not in the file with its id`);
      return;
    }
    const err = outcome.reason as unknown;
    assert.ok(err instanceof SessionDBError, String(err));
    byCode[err.code] = (byCode[err.code] ?? 0) + 1;
    if (err.code === "OUTCOME_UNKNOWN") {
      assert.match(err.message, /may or may not have been applied/);
      // Committed before the thread died: the caller who reads before retrying finds it.
      assert.notEqual(id, undefined, `write ${i} got OUTCOME_UNKNOWN; this fault only strikes after a COMMIT`);
    } else {
      assert.equal(err.code, "INTERNAL", err.message);
      assert.equal(id, undefined, `write ${i} failed with INTERNAL (not applied) but is in the file`);
    }
  });
  assert.ok((byCode.OUTCOME_UNKNOWN ?? 0) > 0, `no write was in the batch the thread died committing: ${JSON.stringify(byCode)}`);

  const stats = await daemonStats(control);
  assert.equal(stats.writer.restarts, 1);
  assert.equal(stats.pid, daemon.pid);
  assert.ok((await db.appendMessage("s", { role: "user", content: "after the crash" })) > 0);
  assert.equal(checkFile(dbPath).integrity, "ok");
  t.diagnostic(`writer died after a COMMIT: ${writes} writes, outcomes ${JSON.stringify(byCode)}, the rest acknowledged`);
});

const READER_ROUNDS = scaled(5, 10);
const CRASHES_PER_ROUND = 3;

test(`reader threads crashing mid-read (${READER_ROUNDS * CRASHES_PER_ROUND} times): that read fails with INTERNAL, the pool recovers`, async (t) => {
  const dbPath = freshDbPath(t);
  const daemon = await serve(t, dbPath, { readers: 2, env: FAULTS });
  const control = await daemon.open(t);
  await control.createSession("seed", "cli");
  for (let i = 0; i < 200; i++) await control.appendMessage("seed", { role: "user", content: `needle number ${i} in the haystack` });
  const searcher = await daemon.open(t);

  const stopFile = join(dirname(dbPath), "stop");
  const loaders = [0, 1].map((i) =>
    spawnLoad(t, { db: dbPath, mode: "daemon", op: "search", query: "haystack", session: "seed", tag: `q${i}`, pipeline: 8, stopFile, durationMs: 60_000 }),
  );
  await Promise.all(loaders.map((c) => c.waitForLine("ready")));

  let checked = 0;
  let internal = 0;
  // Each read sent after a faultCrashReader takes one of its crashes: once every round is armed
  // and this loop has sent that many reads since, no crash is left unspent.
  let allArmed = false;
  let sentSinceArmed = 0;
  const checking = (async () => {
    while (!allArmed || sentSinceArmed < CRASHES_PER_ROUND) {
      sentSinceArmed++;
      try {
        const hits = await searcher.searchMessages("needle", { limit: 500 });
        assert.equal(hits.length, 200, "a search answered with a wrong result");
        checked++;
      } catch (err) {
        if (!(err instanceof SessionDBError) || err.code !== "INTERNAL") throw err;
        internal++;
      }
    }
  })();

  for (let round = 0; round < READER_ROUNDS; round++) {
    await sleep(randomBetween(50, 200));
    await controlOf(control).fault("faultCrashReader", CRASHES_PER_ROUND);
    sentSinceArmed = 0;
  }
  allArmed = true;
  await checking;
  writeFileSync(stopFile, "");
  const reports = await Promise.all(loaders.map((c) => loadReport(c)));

  for (const report of reports) {
    assert.ok(Object.keys(report.failureCodes).every((c) => c === "INTERNAL"), JSON.stringify(report.failureCodes));
    internal += report.failed.length;
  }
  assert.equal(internal, READER_ROUNDS * CRASHES_PER_ROUND, "every crashed read, and only those, failed with INTERNAL");

  // The pool is whole again: as many slow reads at once as it has threads, and more, all answered.
  const stats = await daemonStats(control);
  const parallel = await Promise.all(Array.from({ length: 32 }, () => searcher.searchMessages("needle", { limit: 500 })));
  assert.ok(parallel.every((hits) => hits.length === 200));
  assert.equal(stats.pid, daemon.pid);
  t.diagnostic(
    `reader threads crashed ${internal}x: ${internal} reads got INTERNAL, ${checked} checked searches and ${reports.reduce((n, r) => n + r.ackCount, 0)} loader searches answered; readers ${JSON.stringify(stats.readers)}`,
  );
});

test("the writer thread dying after a COMMIT, with keys: the client sends that batch again and each write is answered its first id, each there once", async (t) => {
  const dbPath = freshDbPath(t);
  const daemon = await serve(t, dbPath, { readers: 2, env: FAULTS });
  const control = await daemon.open(t);
  const db = await daemon.open(t);
  await db.createSession("s", "cli");
  await controlOf(control).fault("faultCrashWriter", "afterCommit");
  const writes = 200;
  const ids = await Promise.all(Array.from({ length: writes }, (_, i) => db.appendMessage("s", { role: "user", content: `write ${i}` })));
  const stats = await daemonStats(control);
  assert.equal(stats.writer.restarts, 1, "the thread died committing one of these batches");
  const stored = rawAll<{ id: number; content: string }>(dbPath, "SELECT id, content FROM messages ORDER BY id");
  assert.deepEqual(stored, ids.map((id, i) => ({ id, content: `write ${i}` })), "every write once, with the id it was answered");
  assert.equal((await db.getSession("s"))?.message_count, writes);
  assert.equal(checkFile(dbPath).integrity, "ok");
});

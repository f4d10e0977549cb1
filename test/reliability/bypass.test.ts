/**
 * Writers that bypass the daemon (SPEC §4, §5): while client processes drive a pipelined write
 * load through the daemon, direct-mode processes and a Python process (the reference's sqlite3
 * and jittered retry) write the same file. Nobody fails, nothing is lost, counters agree with
 * the rows, and everyone's messages are searchable from both sides.
 */
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { daemonStats, shortTempDir } from "../helpers/daemon.js";
import {
  compiledFixture, gatePath, lastJsonLine, releaseTogether, runToSuccess, sourceFixture, spawnNode, spawnPython, type Child,
} from "../helpers/processes.js";
import type { Appended, WriterConfig, WriterReport } from "../fixtures/direct-writer.js";
import { checkFile, loadReport, reconcile, scaled, serve, spawnLoad } from "./harness.js";

const DAEMON_CLIENTS = 2;
const DIRECT_WRITERS = 3;
const DIRECT_WRITES = scaled(200, 400);
const PYTHON_WRITES = scaled(200, 400);

test("direct-mode and Python processes write the file while the daemon runs a write load: no failures, nothing lost", async (t) => {
  const dir = shortTempDir(t);
  const dbPath = join(dir, "state.db");
  const daemon = await serve(t, dbPath, { readers: 2 });
  const db = await daemon.open(t);
  await db.createSession("shared", "cli");
  const gate = gatePath(dir);

  // The daemon's load runs until every bypassing writer is done.
  const stopFile = join(dir, "stop");
  const loaders = Array.from({ length: DAEMON_CLIENTS }, (_, i) =>
    spawnLoad(t, { db: dbPath, mode: "daemon", session: `via-daemon-${i}`, tag: `dm${i}`, pipeline: 32, stopFile, durationMs: 120_000 }),
  );
  await Promise.all(loaders.map((c) => c.waitForLine("ready")));
  const direct: Child[] = Array.from({ length: DIRECT_WRITERS }, (_, i) => {
    const config: WriterConfig = {
      db: dbPath, gate, ownSession: `direct-${i}`, source: "direct", sharedSession: "shared", sharedEvery: 4,
      appends: DIRECT_WRITES, word: "directword", toolCallsEvery: 5,
    };
    return spawnNode(compiledFixture("direct-writer"), [JSON.stringify(config)]);
  });
  const python = spawnPython(sourceFixture("hermes_writer.py"), [
    "write",
    JSON.stringify({ db: dbPath, gate, session: "python", source: "python-hermes", count: PYTHON_WRITES, word: "pythonword", toolCallsEvery: 3 }),
  ]);
  const bypassing = [...direct, python];
  t.after(() => bypassing.forEach((c) => c.kill()));
  await releaseTogether(bypassing, gate);

  const reports = await Promise.all(bypassing.map(async (c) => lastJsonLine<WriterReport>(await runToSuccess(c))));
  writeFileSync(stopFile, "");
  const loads = await Promise.all(loaders.map((c) => loadReport(c)));
  const daemonWrites = loads.reduce((n, l) => n + l.ackCount, 0);
  for (const report of reports) assert.ok(report.ok, `a bypassing writer failed: ${JSON.stringify(report)}`);
  for (const load of loads) {
    assert.deepEqual(load.failureCodes, {});
    assert.ok(load.ackCount > 0);
  }

  // Every write of every bypassing process, with its id; every daemon write, once.
  const appended = reports.flatMap((r) => (r.ok ? r.appended : []));
  assert.equal(appended.length, DIRECT_WRITERS * DIRECT_WRITES + PYTHON_WRITES);
  for (const a of appended) {
    const row = (await db.getMessages(a.sessionId)).find((m) => m.id === a.id);
    assert.equal(row?.content, a.content, `message ${a.id} of ${a.sessionId}`);
  }
  assert.deepEqual(reconcile(dbPath, loads.map((report, i) => ({ tag: `dm${i}`, report })), []).problems, []);
  const expectedToolCalls = (session: string) => appended.filter((a: Appended) => a.sessionId === session).reduce((n, a) => n + a.toolCalls, 0);
  for (const session of ["shared", "python", ...direct.map((_, i) => `direct-${i}`)]) {
    const row = await db.getSession(session);
    assert.equal(row?.message_count, appended.filter((a) => a.sessionId === session).length, `message_count of ${session}`);
    assert.equal(row?.tool_call_count, expectedToolCalls(session), `tool_call_count of ${session}`);
  }

  // Searchable through the daemon, and by the reference.
  assert.equal((await db.searchMessages("directword", { limit: 10_000 })).length, DIRECT_WRITERS * DIRECT_WRITES);
  assert.equal((await db.searchMessages("pythonword", { limit: 10_000 })).length, PYTHON_WRITES);
  assert.equal((await db.searchMessages("loadword", { limit: 100_000 })).length, daemonWrites);
  const seen = lastJsonLine<{ fts: Record<string, number>; integrity: string }>(
    await runToSuccess(spawnPython(sourceFixture("hermes_writer.py"), ["dump", dbPath, "directword", "pythonword", "loadword"])),
  );
  assert.deepEqual(seen.fts, { directword: DIRECT_WRITERS * DIRECT_WRITES, pythonword: PYTHON_WRITES, loadword: daemonWrites });
  assert.equal(seen.integrity, "ok");

  const stats = await daemonStats(db);
  const stopped = await daemon.stop();
  assert.equal(stopped.code, 0, stopped.stderr);
  const check = checkFile(dbPath);
  assert.equal(check.integrity, "ok");
  assert.equal(check.ftsIntegrity, "ok");
  assert.deepEqual(check.counterMismatches, []);
  t.diagnostic(
    `bypass: ${daemonWrites} daemon writes (${stats.writer.batches} commits, lock held p99 ${stats.writer.lockHeldMs.p99.toFixed(1)} ms) ` +
      `alongside ${DIRECT_WRITERS}x${DIRECT_WRITES} direct and ${PYTHON_WRITES} Python writes: 0 failures, all present and searchable`,
  );
});

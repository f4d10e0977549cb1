/**
 * Durability and sharing under load, with real processes (SPEC §5, §4): a `kill -9` of the daemon
 * while several client processes append loses no acknowledged write and leaves a sound file; and
 * processes writing the file directly while the daemon is busy lose nothing and never see BUSY.
 */
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { test, type TestContext } from "node:test";
import type { AppenderConfig } from "../fixtures/daemon-appender.js";
import type { WriterConfig, WriterReport } from "../fixtures/direct-writer.js";
import { killAndWait, shortTempDir, startDaemon } from "../helpers/daemon.js";
import { compiledFixture, lastJsonLine, releaseTogether, sourceFixture, spawnNode, spawnPython, type Child } from "../helpers/processes.js";
import { rawAll, rawGet, rawRun } from "../helpers/raw-db.js";
import { waitUntil } from "../helpers/wait-until.js";

interface Acked {
  id: number;
  sessionId: string;
}

/** An appender's stdout: every append it was told succeeded, and how it ended. */
function parseAppender(stdout: string): { acked: Acked[]; end: string | null } {
  const acked: Acked[] = [];
  let end: string | null = null;
  for (const line of stdout.split("\n")) {
    const [word, a, b] = line.split(" ");
    if (word === "ack") acked.push({ id: Number(a), sessionId: b! });
    else if (word === "end") end = a ?? null;
  }
  return { acked, end };
}

function spawnAppender(t: TestContext, config: AppenderConfig): Child {
  const child = spawnNode(compiledFixture("daemon-appender"), [JSON.stringify(config)]);
  t.after(() => killAndWait(child));
  return child;
}

function waitForMessages(dbPath: string, atLeast: number): Promise<void> {
  return waitUntil(`${atLeast} messages written`, () => (rawGet<{ n: number }>(dbPath, "SELECT COUNT(*) AS n FROM messages")?.n ?? 0) >= atLeast);
}

/** The file is sound: integrity, FTS index, and every session's counter equals its real rows. */
function assertSound(dbPath: string): void {
  assert.equal(rawGet<{ integrity_check: string }>(dbPath, "PRAGMA integrity_check")?.integrity_check, "ok");
  rawRun(dbPath, "INSERT INTO messages_fts(messages_fts) VALUES ('integrity-check')");
  const wrong = rawAll(
    dbPath,
    `SELECT s.id, s.message_count, (SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id) AS real
     FROM sessions s WHERE s.message_count != (SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id)`,
  );
  assert.deepEqual(wrong, [], "message_count matches the real rows");
}

/** Every acknowledged append is in the file, in the session it was sent to. */
function assertAllPresent(dbPath: string, acked: readonly Acked[]): void {
  const rows = new Map(rawAll<{ id: number; session_id: string }>(dbPath, "SELECT id, session_id FROM messages").map((r) => [r.id, r.session_id]));
  const missing = acked.filter((a) => rows.get(a.id) !== a.sessionId);
  assert.deepEqual(missing, [], `${missing.length} of ${acked.length} acknowledged appends are not in the file`);
}

test("kill -9 of the daemon under load from several client processes loses no acknowledged write", async (t) => {
  const dbPath = join(shortTempDir(t), "state.db");
  const everyAck: Acked[] = [];
  const ROUNDS = 3;
  const CLIENTS = 4;
  for (let round = 0; round < ROUNDS; round++) {
    const daemon = await startDaemon(t, dbPath);
    const before = rawGet<{ n: number }>(dbPath, "SELECT COUNT(*) AS n FROM messages")?.n ?? 0;
    const gate = `${dbPath}.gate${round}`;
    const clients = Array.from({ length: CLIENTS }, (_, i) =>
      // Without keys, so the kill ends them (test/reliability/kill9-retries.test.ts: with keys, they go on).
      spawnAppender(t, { db: dbPath, session: `r${round}c${i}`, shared: "shared", sharedEvery: 3, pipeline: 8, gate, idempotencyKeys: false }),
    );
    await releaseTogether(clients, gate);
    // Kill at a different depth of the load each round.
    await waitForMessages(dbPath, before + 200 * (round + 1));
    await daemon.kill9();

    const outputs = await Promise.all(clients.map((c) => c.done));
    const ackedBefore = everyAck.length;
    for (const output of outputs) {
      const { acked, end } = parseAppender(output.stdout);
      assert.equal(output.code, 0, output.stderr);
      assert.equal(end, "UNAVAILABLE", "a client of a killed daemon is told so, it does not hang");
      everyAck.push(...acked);
    }
    assert.ok(everyAck.length - ackedBefore >= 200 * (round + 1) - 8 * CLIENTS, "the load was running when the daemon was killed");
    assertAllPresent(dbPath, everyAck);
    assertSound(dbPath);
  }
  assert.equal(new Set(everyAck.map((a) => a.id)).size, everyAck.length, "no id was acknowledged twice");

  // A new daemon takes the file over as it was left.
  const daemon = await startDaemon(t, dbPath);
  const db = await daemon.open(t);
  const shared = everyAck.filter((a) => a.sessionId === "shared").length;
  assert.ok(((await db.getSession("shared"))?.message_count ?? 0) >= shared);
  await db.appendMessage("shared", { role: "user", content: "after three crashes" });
  assert.equal((await daemon.stop()).code, 0);
  assertSound(dbPath);
});

test("processes writing the file directly while the daemon is under load lose nothing and never see BUSY", async (t) => {
  const dir = shortTempDir(t);
  const dbPath = join(dir, "state.db");
  const stopFile = join(dir, "stop");
  const daemon = await startDaemon(t, dbPath);
  const appenders = Array.from({ length: 3 }, (_, i) =>
    spawnAppender(t, { db: dbPath, session: `daemon-${i}`, pipeline: 8, stopFile }),
  );
  await Promise.all(appenders.map((c) => c.waitForLine("ready")));
  await waitForMessages(dbPath, 100);
  const loadBefore = rawGet<{ n: number }>(dbPath, "SELECT COUNT(*) AS n FROM messages WHERE session_id LIKE 'daemon-%'")!.n;

  // Direct mode with its defaults (1 s busy timeout, 15 jittered attempts), and the reference's own writer.
  const APPENDS = 150;
  const direct = Array.from({ length: 2 }, (_, i) => {
    const config: WriterConfig = { db: dbPath, ownSession: `direct-${i}`, appends: APPENDS, word: "directword" };
    const child = spawnNode(compiledFixture("direct-writer"), [JSON.stringify(config)]);
    t.after(() => killAndWait(child));
    return child;
  });
  const python = spawnPython(sourceFixture("hermes_writer.py"), [
    "write",
    JSON.stringify({ db: dbPath, session: "python", count: APPENDS, word: "pythonword" }),
  ]);
  t.after(() => killAndWait(python));

  const directResults = await Promise.all(direct.map((c) => c.done));
  const pythonResult = await python.done;
  const loadDuring = rawGet<{ n: number }>(dbPath, "SELECT COUNT(*) AS n FROM messages WHERE session_id LIKE 'daemon-%'")!.n - loadBefore;
  writeFileSync(stopFile, "stop");
  const appenderResults = await Promise.all(appenders.map((c) => c.done));

  const directAcks: Acked[] = [];
  for (const result of directResults) {
    const report = lastJsonLine<WriterReport>(result);
    assert.equal(result.code, 0, `direct writer failed: ${result.stdout} ${result.stderr}`);
    assert.ok(report.ok);
    assert.equal(report.appended.length, APPENDS);
    directAcks.push(...report.appended.map((a) => ({ id: a.id, sessionId: a.sessionId })));
  }
  assert.equal(pythonResult.code, 0, `the reference writer failed: ${pythonResult.stderr}`);
  const pythonReport = lastJsonLine<{ ok: boolean; appended: Array<{ id: number; sessionId: string }> }>(pythonResult);
  assert.equal(pythonReport.appended.length, APPENDS);

  const daemonAcks: Acked[] = [];
  for (const result of appenderResults) {
    const { acked, end } = parseAppender(result.stdout);
    assert.equal(end, "ok", result.stderr);
    daemonAcks.push(...acked);
  }
  assert.ok(loadDuring > 0, "the daemon kept committing while the direct writers ran");
  assertAllPresent(dbPath, [...directAcks, ...pythonReport.appended, ...daemonAcks]);
  assert.equal((await daemon.stop()).code, 0);
  assertSound(dbPath);
});

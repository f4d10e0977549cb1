/**
 * Group commit (SPEC §5) against a real `serve` process: concurrent writes share transactions,
 * and a failing request in a shared transaction fails alone.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { SessionDBError, type SessionDB } from "../../src/index.js";
import { daemonStats, freshDbPath, holdWriteLock, startDaemon } from "../helpers/daemon.js";
import { rawAll, rawGet } from "../helpers/raw-db.js";
import { waitUntil } from "../helpers/wait-until.js";

const CLIENTS = 16;
const ROUNDS = 40;

test("16 clients appending concurrently share commits: far fewer transactions than writes", async (t) => {
  const daemon = await startDaemon(t, freshDbPath(t));
  const clients = await Promise.all(Array.from({ length: CLIENTS }, () => daemon.open(t)));
  await Promise.all(clients.map((db, i) => db.createSession(`s${i}`, "cli")));
  const before = (await daemonStats(clients[0]!)).writer;

  await Promise.all(
    clients.map(async (db, i) => {
      for (let r = 0; r < ROUNDS; r++) await db.appendMessage(`s${i}`, { role: "user", content: `round ${r}` });
    }),
  );

  const after = (await daemonStats(clients[0]!)).writer;
  const writes = after.writes - before.writes;
  const batches = after.batches - before.batches;
  assert.equal(writes, CLIENTS * ROUNDS);
  assert.ok(batches < writes / 2, `${batches} commits for ${writes} writes: group commit is not grouping`);
  assert.ok(after.maxBatchSize > 2, `largest batch ${after.maxBatchSize}`);
  for (let i = 0; i < CLIENTS; i++) {
    assert.deepEqual(rawGet(daemon.dbPath, "SELECT message_count AS n FROM sessions WHERE id = ?", `s${i}`), { n: ROUNDS });
  }
});

test("one pipelining client with 16 requests in flight gets them committed in shared transactions", async (t) => {
  const daemon = await startDaemon(t, freshDbPath(t));
  const db = await daemon.open(t);
  await db.createSession("p", "cli");
  const before = (await daemonStats(db)).writer;

  const ids: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const wave = Array.from({ length: CLIENTS }, (_, k) => db.appendMessage("p", { role: "user", content: `w${round}-${k}` }));
    ids.push(...(await Promise.all(wave)));
  }

  const after = (await daemonStats(db)).writer;
  const writes = after.writes - before.writes;
  const batches = after.batches - before.batches;
  assert.equal(writes, CLIENTS * ROUNDS);
  assert.ok(batches < writes / 2, `${batches} commits for ${writes} writes`);
  assert.equal(new Set(ids).size, ids.length, "every append got its own id");
  assert.deepEqual(rawGet(daemon.dbPath, "SELECT message_count AS n FROM sessions WHERE id = 'p'"), { n: ids.length });
  assert.deepEqual(rawGet(daemon.dbPath, "SELECT COUNT(*) AS n FROM messages WHERE session_id = 'p'"), { n: ids.length });
});

async function waitForQueue(db: SessionDB, depth: number): Promise<void> {
  await waitUntil(`${depth} writes queued in the daemon`, async () => (await daemonStats(db)).writer.queueDepth >= depth);
}

test("a failing request in a shared transaction gets its own error; the others in it commit", async (t) => {
  const daemon = await startDaemon(t, freshDbPath(t));
  const db = await daemon.open(t);
  await db.createSession("a", "cli");
  await db.createSession("b", "cli");
  await db.setSessionTitle("a", "taken title");
  const before = (await daemonStats(db)).writer;

  // Queue everything behind a lock held by another process, so it all waits for one turn.
  const lock = await holdWriteLock(t, daemon.dbPath);
  const pilot = db.appendMessage("a", { role: "user", content: "pilot" });
  await waitForQueue(db, 1);
  const settled = Promise.allSettled([
    db.appendMessage("a", { role: "user", content: "first ok" }),
    db.setSessionTitle("b", "taken title"),
    db.appendMessage("b", { role: "user", content: "second ok" }),
    db.appendMessage("missing", { role: "user", content: "to nowhere" }),
    db.createSession("c", "cli"),
    db.setSessionTitle("c", "own title"),
  ]);
  await waitForQueue(db, 7);
  await lock.release();
  const [pilotId, results] = await Promise.all([pilot, settled]);
  assert.ok(pilotId > 0);

  const after = (await daemonStats(db)).writer;
  assert.equal(after.writes - before.writes, 7);
  // The pilot was taken alone before the lock came free; the six others queued behind it, so at
  // most two transactions means each failing request shared one with requests that succeeded.
  assert.ok(after.batches - before.batches <= 2, `${after.batches - before.batches} transactions for 7 writes`);

  const [firstOk, dupTitle, secondOk, missing, created, ownTitle] = results;
  assert.equal(firstOk.status, "fulfilled");
  assert.equal(secondOk.status, "fulfilled");
  assert.deepEqual(created, { status: "fulfilled", value: "c" });
  assert.deepEqual(ownTitle, { status: "fulfilled", value: true });
  assert.equal(dupTitle.status, "rejected");
  assert.ok(dupTitle.reason instanceof SessionDBError);
  assert.equal(dupTitle.reason.code, "TITLE_IN_USE");
  assert.equal(missing.status, "rejected");
  assert.ok(missing.reason instanceof SessionDBError);
  assert.equal(missing.reason.code, "CONSTRAINT");

  // In the file: the successes, and nothing of the failures.
  const contents = rawAll<{ content: string }>(daemon.dbPath, "SELECT content FROM messages WHERE session_id != 'lock-holder' ORDER BY id").map((r) => r.content);
  assert.deepEqual(contents, ["pilot", "first ok", "second ok"]);
  assert.deepEqual(
    rawAll(daemon.dbPath, "SELECT id, title, message_count FROM sessions WHERE id IN ('a', 'b', 'c') ORDER BY id"),
    [
      { id: "a", title: "taken title", message_count: 2 },
      { id: "b", title: null, message_count: 1 },
      { id: "c", title: "own title", message_count: 0 },
    ],
  );
  assert.equal(rawGet(daemon.dbPath, "SELECT COUNT(*) AS n FROM messages WHERE session_id = 'missing'")?.n, 0);
  assert.equal(rawGet(daemon.dbPath, "SELECT COUNT(*) AS n FROM sessions WHERE id = 'missing'")?.n, 0);
});

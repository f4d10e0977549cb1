/**
 * One client writing one message at a time (most Hermes processes), alone or beside a pipelining
 * one, behind another process's lock, on a full disk: every acknowledged write is in the file, in
 * the order its client sent it, and none is applied twice. (Issue 15 tried committing such lone
 * writes on the daemon's main thread; these tests guard whatever path a lone write takes.)
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { SessionDBError } from "../../src/index.js";
import { controlOf, daemonStats, freshDbPath, holdWriteLock, startDaemon } from "../helpers/daemon.js";
import { rawAll } from "../helpers/raw-db.js";
import { waitUntil } from "../helpers/wait-until.js";

const LONE = 120;
const BURSTS = 12;
const BURST = 16;

function contents(dbPath: string, session: string): string[] {
  return rawAll<{ content: string }>(dbPath, "SELECT content FROM messages WHERE session_id = ? ORDER BY id", session).map((r) => r.content);
}

test("a lone client's writes, mixed with another client's pipelined bursts: all in the file, each client's in its order", async (t) => {
  const daemon = await startDaemon(t, freshDbPath(t));
  const lone = await daemon.open(t);
  const bursty = await daemon.open(t);
  await lone.createSession("lone", "cli");
  await bursty.createSession("bursty", "cli");
  const before = (await daemonStats(lone)).writer;

  const loneIds: number[] = [];
  const burstIds: number[] = [];
  await Promise.all([
    (async () => {
      for (let i = 0; i < LONE; i++) loneIds.push(await lone.appendMessage("lone", { role: "user", content: `lone ${i}` }));
    })(),
    (async () => {
      for (let b = 0; b < BURSTS; b++) {
        const wave = Array.from({ length: BURST }, (_, i) => bursty.appendMessage("bursty", { role: "user", content: `burst ${b * BURST + i}` }));
        burstIds.push(...(await Promise.all(wave)));
      }
    })(),
  ]);

  assert.deepEqual(contents(daemon.dbPath, "lone"), Array.from({ length: LONE }, (_, i) => `lone ${i}`));
  assert.deepEqual(contents(daemon.dbPath, "bursty"), Array.from({ length: BURSTS * BURST }, (_, i) => `burst ${i}`));
  // Each client's ids grow in the order it sent its writes.
  assert.deepEqual(loneIds, [...loneIds].sort((a, b) => a - b));
  assert.deepEqual(burstIds, [...burstIds].sort((a, b) => a - b));
  const after = (await daemonStats(lone)).writer;
  assert.equal(after.writes - before.writes, LONE + BURSTS * BURST, "stats count every write");
  assert.equal(after.queueDepth, 0);
});

test("a lone write while another process holds the write lock waits for it, then lands once", async (t) => {
  const daemon = await startDaemon(t, freshDbPath(t));
  const db = await daemon.open(t);
  await db.createSession("s", "cli");
  await db.appendMessage("s", { role: "user", content: "before the lock" });
  const lock = await holdWriteLock(t, daemon.dbPath);

  const pending = db.appendMessage("s", { role: "user", content: "while locked" });
  // Queued, not failed: it waits in the daemon for the lock.
  await waitUntil("the write queued behind the lock", async () => (await daemonStats(db)).writer.queueDepth > 0);
  await lock.release();
  assert.ok((await pending) > 0);
  assert.ok((await db.appendMessage("s", { role: "user", content: "after the lock" })) > 0);
  assert.deepEqual(contents(daemon.dbPath, "s"), ["before the lock", "while locked", "after the lock"]);
});

test("lone writes on a full disk fail with IO, lose nothing acknowledged, and succeed once there is room", async (t) => {
  const daemon = await startDaemon(t, freshDbPath(t), { env: { SESSIONDB_FAULT_INJECTION: "1" } });
  const db = await daemon.open(t);
  await db.createSession("fill", "cli");
  const pages = rawAll<{ page_count: number }>(daemon.dbPath, "PRAGMA page_count")[0]!.page_count;
  await controlOf(db).fault("faultMaxPageCount", pages + 100);

  const acked: string[] = [];
  const failures: SessionDBError[] = [];
  // The cap is about 400 KiB away: 200 writes of 16 KiB overrun it, and stay far below the WAL guard's limit.
  for (let i = 0; failures.length < 3 && i < 200; i++) {
    const content = `fill ${i} ${"z".repeat(16 * 1024)}`;
    try {
      await db.appendMessage("fill", { role: "user", content });
      acked.push(content);
    } catch (err) {
      failures.push(err as SessionDBError);
    }
  }
  assert.equal(failures.length, 3, "the capped file never filled");
  for (const err of failures) {
    assert.ok(err instanceof SessionDBError);
    assert.equal(err.code, "IO", err.message);
  }

  await controlOf(db).fault("faultMaxPageCount", null);
  const last = "after the disk had room again";
  assert.ok((await db.appendMessage("fill", { role: "user", content: last })) > 0);
  assert.deepEqual(contents(daemon.dbPath, "fill"), [...acked, last]);
});

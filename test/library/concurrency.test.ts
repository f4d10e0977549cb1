/**
 * Direct mode under contention (SPEC §4): real processes writing one file at once lose nothing,
 * a held write lock is waited out, a lock held past the retry budget gives BUSY and writes
 * nothing, and an error that is not about the lock fails at once.
 */
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { test, type TestContext } from "node:test";
import { openSessionDB, SessionDBError, type OpenOptions, type SessionDB } from "../../src/index.js";
import {
  compiledFixture, gatePath, lastJsonLine, releaseTogether, runToSuccess, sourceFixture, spawnNode, spawnPython, type Child,
} from "../helpers/processes.js";
import { withRaw } from "../helpers/sqlite-files.js";
import { tempDir } from "../helpers/temp-dir.js";
import type { Appended, WriterConfig, WriterReport } from "../fixtures/direct-writer.js";

async function openDirect(t: TestContext, path: string, options: OpenOptions = {}): Promise<SessionDB> {
  const db = await openSessionDB({ ...options, path, mode: "direct" });
  t.after(() => db.close());
  return db;
}

function isCode(code: string) {
  return (err: unknown) => err instanceof SessionDBError && err.code === code;
}

/** Starts the Python lock holder and resolves once it holds `BEGIN IMMEDIATE`. */
async function holdWriteLock(t: TestContext, path: string, seconds: number, releaseFile?: string): Promise<Child> {
  const holder = spawnPython(sourceFixture("hermes_writer.py"), ["hold", path, String(seconds), ...(releaseFile ? [releaseFile] : [])]);
  t.after(() => holder.kill());
  await holder.waitForLine("locked");
  return holder;
}

const WRITERS = 8;
const APPENDS = 150;
const SHARED_EVERY = 5;
const TOOL_CALLS_EVERY = 7;

test(`${WRITERS} processes appending at once lose nothing and fail nothing`, async (t) => {
  const dir = tempDir(t);
  const path = join(dir, "state.db");
  const setup = await openSessionDB({ path, mode: "direct" });
  await setup.createSession("shared", "cli");
  await setup.close();

  const gate = gatePath(dir);
  const children: Child[] = [];
  t.after(() => children.forEach((c) => c.kill()));
  for (let i = 0; i < WRITERS; i++) {
    const config: WriterConfig = {
      db: path, gate, ownSession: `writer-${i}`, sharedSession: "shared", sharedEvery: SHARED_EVERY, appends: APPENDS,
      word: `convoy${i}`, toolCallsEvery: TOOL_CALLS_EVERY,
    };
    children.push(spawnNode(compiledFixture("direct-writer"), [JSON.stringify(config)]));
  }
  await releaseTogether(children, gate);

  const appended: Appended[] = [];
  for (const child of children) {
    const report = lastJsonLine<WriterReport>(await runToSuccess(child));
    assert.ok(report.ok, JSON.stringify(report));
    assert.equal(report.appended.length, APPENDS);
    appended.push(...report.appended);
  }
  assert.equal(new Set(appended.map((a) => a.id)).size, WRITERS * APPENDS, "every append got its own id");

  withRaw(path, (raw) => {
    assert.equal(raw.pragma("integrity_check", { simple: true }), "ok");
    const stored = new Map(
      (raw.prepare("SELECT id, session_id, content FROM messages").all() as Array<{ id: number; session_id: string; content: string }>).map(
        (m) => [m.id, m],
      ),
    );
    assert.equal(stored.size, WRITERS * APPENDS);
    for (const a of appended) assert.deepEqual(stored.get(a.id), { id: a.id, session_id: a.sessionId, content: a.content });

    const counters = raw
      .prepare(
        `SELECT s.id, s.message_count, s.tool_call_count, (SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id) AS real
         FROM sessions s ORDER BY s.id`,
      )
      .all() as Array<{ id: string; message_count: number; tool_call_count: number; real: number }>;
    assert.equal(counters.length, WRITERS + 1);
    for (const row of counters) {
      const mine = appended.filter((a) => a.sessionId === row.id);
      assert.equal(row.message_count, row.real, `message_count of ${row.id}`);
      assert.equal(row.real, mine.length, `messages of ${row.id}`);
      assert.equal(row.tool_call_count, mine.reduce((n, a) => n + a.toolCalls, 0), `tool_call_count of ${row.id}`);
    }
  });

  const db = await openDirect(t, path);
  assert.equal((await db.getSession("shared"))?.message_count, WRITERS * (APPENDS / SHARED_EVERY));
  assert.equal((await db.getMessages("writer-3")).length, APPENDS - APPENDS / SHARED_EVERY);
  assert.equal((await db.searchMessages("convoy5", { limit: 200 })).length, APPENDS);
});

test("a write waits out another process holding the write lock for 2.5 s", async (t) => {
  const dir = tempDir(t);
  const path = join(dir, "state.db");
  const db = await openDirect(t, path); // the default budget: 20 s
  await db.createSession("patient", "cli");

  const holder = await holdWriteLock(t, path, 2.5);
  const id = await db.appendMessage("patient", { role: "user", content: "written after the lock came free" });
  const held = lastJsonLine<{ messageId: number }>(await runToSuccess(holder));

  assert.ok(id > held.messageId, "the write committed after the holder's transaction, so it waited for it");
  assert.equal((await db.getSession("patient"))?.message_count, 1);
  assert.equal((await db.getSession("lock-holder"))?.message_count, 1);
});

test("a write that cannot get the lock within the retry budget fails with BUSY and writes nothing", async (t) => {
  const dir = tempDir(t);
  const path = join(dir, "state.db");
  const release = join(dir, "release");
  const db = await openDirect(t, path, { retry: { maxAttempts: 3, minDelayMs: 5, maxDelayMs: 10 }, busyTimeoutMs: 50 });
  await db.createSession("starved", "cli");

  const holder = await holdWriteLock(t, path, 30, release);
  try {
    await assert.rejects(db.appendMessage("starved", { role: "user", content: "never stored ocelot" }), isCode("BUSY"));
    await assert.rejects(db.createSession("ghost", "cli"), isCode("BUSY"));
    // Reads are not blocked by a writer in WAL mode.
    assert.equal((await db.getSession("starved"))?.message_count, 0);
  } finally {
    writeFileSync(release, "");
  }
  await runToSuccess(holder);

  assert.equal((await db.getSession("starved"))?.message_count, 0);
  assert.deepEqual(await db.getMessages("starved"), []);
  assert.equal(await db.getSession("ghost"), null);
  assert.deepEqual(await db.searchMessages("ocelot"), []);
  // The failed attempts left no transaction open: the same handle writes once the lock is free.
  await db.appendMessage("starved", { role: "user", content: "now it fits" });
  assert.equal((await db.getSession("starved"))?.message_count, 1);
});

test("an error that is not about the lock fails at once, without retrying", async (t) => {
  const dir = tempDir(t);
  const path = join(dir, "state.db");
  // One retry would sleep 10 s: far longer than two failing calls take on any machine, however loaded.
  const retry = { maxAttempts: 15, minDelayMs: 10_000, maxDelayMs: 10_000 };
  const db = await openDirect(t, path, { retry });
  await db.createSession("exists", "cli");

  const started = performance.now();
  await assert.rejects(db.appendMessage("missing", { role: "user", content: "orphan" }), isCode("CONSTRAINT"));
  await assert.rejects(db.createSession("child", "cli", { parentSessionId: "no-such-parent" }), isCode("CONSTRAINT"));
  const elapsed = performance.now() - started;

  assert.ok(elapsed < retry.minDelayMs, `two failures took ${elapsed.toFixed(0)} ms; one retry alone sleeps ${retry.minDelayMs} ms`);
  assert.equal(await db.messageCount(), 0);
  assert.equal(await db.getSession("missing"), null);
  assert.equal(await db.getSession("child"), null);
  assert.equal(await db.sessionCount(), 1);
});

test("the lock patience is a time budget: with SQLite's own wait off, a 4 s lock is waited out by default", async (t) => {
  const dir = tempDir(t);
  const path = join(dir, "state.db");
  // busyTimeoutMs 0 leaves only the retry: 15 attempts of 20–150 ms (the reference's) would give up after about 1.3 s.
  const db = await openDirect(t, path, { busyTimeoutMs: 0 });
  await db.createSession("patient", "cli");

  const holder = await holdWriteLock(t, path, 4);
  const id = await db.appendMessage("patient", { role: "user", content: "after four seconds" });
  const held = lastJsonLine<{ messageId: number }>(await runToSuccess(holder));
  assert.ok(id > held.messageId, "the write waited for the holder's transaction");
  assert.equal((await db.getSession("patient"))?.message_count, 1);
});

test("past a small retry budget (3 s) a write fails with BUSY, having waited the whole budget, and writes nothing", async (t) => {
  const dir = tempDir(t);
  const path = join(dir, "state.db");
  const release = join(dir, "release");
  const budgetMs = 3000;
  const db = await openDirect(t, path, { busyTimeoutMs: 0, retry: { budgetMs } });
  await db.createSession("starved", "cli");

  const holder = await holdWriteLock(t, path, 60, release);
  try {
    const started = performance.now();
    await assert.rejects(db.appendMessage("starved", { role: "user", content: "never stored" }), (err: unknown) => {
      assert.ok(err instanceof SessionDBError && err.code === "BUSY", String(err));
      assert.match(err.message, /stayed locked by another writer for \d+ ms/);
      return true;
    });
    // A lower bound only: the budget is spent before BUSY, however slow the machine.
    assert.ok(performance.now() - started >= budgetMs, "BUSY came before the budget was spent");
  } finally {
    writeFileSync(release, "");
  }
  await runToSuccess(holder);
  assert.equal((await db.getSession("starved"))?.message_count, 0);
});

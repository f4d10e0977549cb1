/**
 * The durable spool from TypeScript (issue 25 item 3, docs/spool.md): writers while another
 * process holds the file's write lock past the budget get SPOOLED for every append, which is then
 * replayed exactly once, in order; a torn last record is ignored, never half-applied; a full
 * spool takes no write and says so; the files are the user's alone.
 */
import assert from "node:assert/strict";
import { appendFileSync, chmodSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { openSessionDB, SessionDBError, SpooledError, type SessionDB } from "../../src/index.js";
import { SpoolFile } from "../../src/spool/spool-file.js";
import { freshDbPath, holdWriteLock, shortTempDir } from "../helpers/daemon.js";
import { rawAll } from "../helpers/raw-db.js";

/** The retry budget of a handle that must give up while the lock is held: short, so the test is. */
const SHORT_RETRY = { budgetMs: 200 };

function contents(path: string, session = "s"): string[] {
  return rawAll<{ content: string }>(path, "SELECT content FROM messages WHERE session_id = ? ORDER BY id", session).map((r) => r.content);
}

async function rejectsSpooled(call: Promise<unknown>): Promise<SpooledError> {
  const err = await call.then(() => assert.fail("the write was applied while the file was locked"), (e: unknown) => e);
  assert.ok(err instanceof SpooledError, `expected SpooledError, got ${String(err)}`);
  assert.equal(err.code, "SPOOLED");
  return err;
}

test("direct mode: appends while another process holds the lock past the budget are spooled, then replayed once, in order, before the next write", async (t) => {
  const path = freshDbPath(t);
  const dir = join(shortTempDir(t), "spool");
  const db = await openSessionDB({ path, mode: "direct", retry: SHORT_RETRY, spool: { dir } });
  t.after(() => db.close());
  await db.createSession("s", "cli");
  await db.appendMessage("s", { role: "user", content: "before" });
  const lock = await holdWriteLock(t, path);
  const keys: string[] = [];
  for (let i = 0; i < 5; i++) {
    const err = await rejectsSpooled(db.appendMessage("s", { role: "user", content: `spooled ${i}` }));
    assert.match(err.message, /BUSY/);
    keys.push(err.idempotencyKey);
  }
  // A caller's own key is the record's.
  const own = await rejectsSpooled(db.appendMessage("s", { role: "user", content: "keyed" }, { idempotencyKey: "caller-key-1" }));
  assert.equal(own.idempotencyKey, "caller-key-1");
  const spool = new SpoolFile(path, dir);
  assert.equal(own.spoolPath, spool.path);
  const pending = await spool.pending();
  assert.deepEqual(pending.map((r) => (r.args[1] as { content: string }).content), [...[0, 1, 2, 3, 4].map((i) => `spooled ${i}`), "keyed"]);
  assert.deepEqual(pending.map((r) => r.key), [...keys, "caller-key-1"]);
  assert.ok(pending.every((r) => r.op === "appendMessage" && r.db === path && r.ts > 0));
  assert.equal(statSync(dir).mode & 0o777, 0o700);
  assert.equal(statSync(spool.path).mode & 0o777, 0o600);
  await lock.release();

  await db.appendMessage("s", { role: "user", content: "after" }); // the spool goes first: the caller's order
  assert.deepEqual(await spool.pending(), []);
  assert.equal(statSync(spool.path).size, 0);
  assert.deepEqual(contents(path), ["before", ...[0, 1, 2, 3, 4].map((i) => `spooled ${i}`), "keyed", "after"]);
  // Each replayed message keeps the time it was written (the record's ts: when the call was made).
  const stamps = rawAll<{ timestamp: number }>(path, "SELECT timestamp FROM messages WHERE session_id = 's' ORDER BY id").map((r) => r.timestamp);
  assert.deepEqual(stamps.slice(1, 7), pending.map((r) => r.ts));
  assert.ok(stamps[0]! <= stamps[1]! && stamps[6]! <= stamps[7]!, `in order: ${stamps.join(", ")}`);
  // Once: sent again by the caller under its key, it is not applied again (the replay gave the
  // message its time, so these arguments differ: IDEMPOTENCY_CONFLICT), and nothing is left to replay.
  await assert.rejects(
    db.appendMessage("s", { role: "user", content: "keyed" }, { idempotencyKey: "caller-key-1" }),
    (e: SessionDBError) => e.code === "IDEMPOTENCY_CONFLICT",
  );
  await db.appendMessage("s", { role: "user", content: "last" });
  assert.deepEqual(contents(path), ["before", ...[0, 1, 2, 3, 4].map((i) => `spooled ${i}`), "keyed", "after", "last"]);
});

test("writes made while records are pending go behind them: spooled too while the lock is held", async (t) => {
  const path = freshDbPath(t);
  const dir = join(shortTempDir(t), "spool");
  const db = await openSessionDB({ path, mode: "direct", retry: SHORT_RETRY, spool: { dir } });
  t.after(() => db.close());
  await db.createSession("s", "cli");
  const lock = await holdWriteLock(t, path);
  // Made at once: the first to fail sets the order; those after it wait their turn.
  const calls = [0, 1, 2, 3].map((i) => db.appendMessage("s", { role: "user", content: `m${i}` }));
  for (const call of calls) await rejectsSpooled(call);
  await rejectsSpooled(db.setSessionTitle("s", "a title"));
  assert.equal((await new SpoolFile(path, dir).pending()).length, 5);
  await lock.release();
  await db.endSession("s", "done");
  assert.deepEqual(contents(path).sort(), ["m0", "m1", "m2", "m3"]);
  assert.equal(await db.getSessionTitle("s"), "a title");
  assert.equal((await db.getSession("s"))?.end_reason, "done");
});

test("a torn last record (a writer killed mid-append) is ignored, never half-applied, and cut off by the next append", async (t) => {
  const path = freshDbPath(t);
  const dir = join(shortTempDir(t), "spool");
  const setup = await openSessionDB({ path, mode: "direct" });
  await setup.createSession("s", "cli");
  await setup.close();
  const spool = new SpoolFile(path, dir);
  await spool.append("k1", "appendMessage", ["s", { role: "user", content: "one" }], 1);
  const whole = readFileSync(spool.path);
  await spool.append("k2", "appendMessage", ["s", { role: "user", content: "two" }], 2);
  const second = readFileSync(spool.path).subarray(whole.length);
  appendFileSync(spool.path, second.subarray(0, second.length >> 1)); // half a record, no newline
  assert.deepEqual((await spool.pending()).map((r) => r.key), ["k1", "k2"]);
  await spool.append("k3", "appendMessage", ["s", { role: "user", content: "three" }], 3);
  assert.deepEqual((await spool.pending()).map((r) => r.key), ["k1", "k2", "k3"]);
  // A record whose bytes were damaged (its checksum fails) is skipped, never applied in part.
  appendFileSync(spool.path, Buffer.from(second.toString().replace("two", "owt").replace("k2", "k4")));
  assert.deepEqual((await spool.pending()).map((r) => r.key), ["k1", "k2", "k3"]);
  // A direct-mode handle opening the file replays it, spool option or not.
  const db = await openSessionDB({ path, mode: "direct", spool: { dir } });
  t.after(() => db.close());
  assert.deepEqual((await db.getMessages("s")).map((m) => m.content), ["one", "two", "three"]);
  assert.equal(statSync(spool.path).size, 0);
});

test("a full spool takes no write: the call rejects with the original error, saying why", async (t) => {
  const path = freshDbPath(t);
  const dir = join(shortTempDir(t), "spool");
  const db = await openSessionDB({ path, mode: "direct", retry: SHORT_RETRY, spool: { dir, maxBytes: 300 } });
  t.after(() => db.close());
  await db.createSession("s", "cli");
  const lock = await holdWriteLock(t, path);
  await rejectsSpooled(db.appendMessage("s", { role: "user", content: "fits" }));
  const err = await db.appendMessage("s", { role: "user", content: "x".repeat(300) }).catch((e: unknown) => e);
  assert.ok(err instanceof SessionDBError && !(err instanceof SpooledError), String(err));
  assert.equal(err.code, "BUSY");
  assert.match(err.message, /spool could not take it: the spool .* is full/);
  await lock.release();
  await db.appendMessage("s", { role: "user", content: "after" });
  assert.deepEqual(contents(path), ["fits", "after"]);
});

test("a bad spool option is INVALID_ARGUMENT", async (t) => {
  const path = freshDbPath(t);
  for (const spool of [{ maxBytes: 0 }, { maxBytes: 1.5 }, { maxBytes: "big" }, { folder: "x" }, { dir: "" }, "yes", null]) {
    await assert.rejects(openSessionDB({ path, mode: "direct", spool: spool as never }), (e: SessionDBError) => e.code === "INVALID_ARGUMENT", JSON.stringify(spool));
  }
});

test("a spool others may write is never replayed: the handle with the spool on refuses to open, saying why; the records stay", async (t) => {
  const path = freshDbPath(t);
  const dir = join(shortTempDir(t), "spool");
  const setup: SessionDB = await openSessionDB({ path, mode: "direct" });
  await setup.createSession("s", "cli");
  await setup.close();
  const spool = new SpoolFile(path, dir);
  await spool.append("k1", "appendMessage", ["s", { role: "user", content: "planted?" }], 1);
  chmodSync(spool.path, 0o622);
  await assert.rejects(openSessionDB({ path, mode: "direct", spool: { dir } }), (e: SessionDBError) => e.code === "PERMISSION" && e.message.includes(spool.path));
  await assert.rejects(spool.pending(), (e: SessionDBError) => e.code === "PERMISSION");
  chmodSync(spool.path, 0o600);
  assert.equal((await spool.pending()).length, 1);
  assert.deepEqual(contents(path), []);
});

/**
 * The daemon's change feed (issue 26) on real processes: writes that bypass the daemon (a
 * direct-mode process, the reference Python implementation) seen by a TypeScript watcher through
 * it; resumption after a daemon restart; a stalled watcher that never reads gets `resync` while
 * the daemon's memory stays flat; a departed client's subscription ends; the wire's unwatch and
 * shutdown; watch chunks never hold up other replies on the connection; writes that commit in one
 * batch are told in the order they ran.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { openSessionDB, type WatchEvent } from "../../src/index.js";
import { Watcher, isMessage, messageIds, subscribed } from "../contract/watch-contract.js";
import { controlOf, daemonStats, freshDbPath, holdWriteLock, startDaemon } from "../helpers/daemon.js";
import { compiledFixture, lastJsonLine, runToSuccess, sourceFixture, spawnNode, spawnPython } from "../helpers/processes.js";
import { RawConnection, type Reply } from "../helpers/raw-connection.js";
import { waitUntil } from "../helpers/wait-until.js";
import type { WriterReport } from "../fixtures/direct-writer.js";

test("writes of a direct-mode process and of the reference Python implementation reach a watcher through the daemon", async (t) => {
  const dbPath = freshDbPath(t);
  const daemon = await startDaemon(t, dbPath);
  const db = await daemon.open(t);
  const watcher = new Watcher(db, { afterMessageId: 0 });
  t.after(() => watcher.stop());
  await subscribed(db, watcher);

  // Direct mode, in another process: it never talks to the daemon.
  const direct = lastJsonLine<WriterReport>(await runToSuccess(spawnNode(compiledFixture("direct-writer"), [
    JSON.stringify({ db: dbPath, ownSession: "direct", source: "direct", appends: 5, word: "bypass" }),
  ])));
  assert.ok(direct.ok);
  const directIds = direct.appended.map((a) => a.id);
  const seen = await watcher.until(isMessage(directIds.at(-1)!));
  assert.deepEqual(messageIds(seen), directIds, "every message of the direct writer, in order");
  assert.ok(seen.some((e) => e.type === "session" && e.change === "created" && e.sessionId === "direct"), "its session's creation");

  // The reference implementation's own calls, with its own SQL.
  const calls = [
    ["create_session", ["py", "telegram"], { model: "gpt" }],
    ["append_message", ["py", "user", "from the reference"], {}],
    ["update_token_counts", ["py"], { input_tokens: 7, output_tokens: 3 }],
    ["end_session", ["py", "done"], {}],
  ];
  const result = lastJsonLine<{ results: unknown[] }>(await runToSuccess(spawnPython(sourceFixture("hermes_writer.py"), ["calls", dbPath, JSON.stringify(calls)])));
  const pyMessage = result.results[1] as number;
  // Commits of another process are seen by polling: those within one poll come in one look (a
  // session created and ended meanwhile is `created`, its row ended), so wait for the row's end.
  let messageSeen = false;
  let endSeen = false;
  const events = await watcher.until((e) => {
    messageSeen ||= isMessage(pyMessage)(e);
    endSeen ||= e.type === "session" && e.sessionId === "py" && e.session?.end_reason === "done";
    return messageSeen && endSeen;
  });
  const message = events.find(isMessage(pyMessage)) as Extract<WatchEvent, { type: "message" }> | undefined;
  assert.equal(message?.message.content, "from the reference");
  const changes = events.flatMap((e) => (e.type === "session" && e.sessionId === "py" ? [e.change] : []));
  assert.equal(changes[0], "created", `py's changes: ${changes.join(", ")}`);
  const createdAt = events.findIndex((e) => e.type === "session" && e.sessionId === "py" && e.change === "created");
  assert.ok(createdAt < events.findIndex(isMessage(pyMessage)), "its creation before its message");
  const last = events.findLast((e) => e.type === "session" && e.sessionId === "py") as Extract<WatchEvent, { type: "session" }>;
  assert.equal(last.session?.input_tokens, 7);
  assert.equal(last.session?.output_tokens, 3);
});

test("a watcher resumes after a daemon restart from its last message id: a resync, then every later message once", async (t) => {
  const dbPath = freshDbPath(t);
  const first = await startDaemon(t, dbPath);
  const writer = await openSessionDB({ path: dbPath, mode: "direct" });
  t.after(() => writer.close());
  await writer.createSession("s", "cli");
  const db = await openSessionDB({ path: dbPath, socketPath: first.socketPath, mode: "daemon" });
  t.after(() => db.close());
  const watcher = new Watcher(db, { sessionId: "s", afterMessageId: 0 });
  t.after(() => watcher.stop());
  const before = await writer.appendMessage("s", { role: "user", content: "before" });
  await watcher.until(isMessage(before));

  await first.stop();
  // Written while no daemon runs: the resumed watch replays it from its cursor.
  const during = await writer.appendMessage("s", { role: "user", content: "while no daemon ran" });
  await startDaemon(t, dbPath, { socketPath: first.socketPath });
  const after = await writer.appendMessage("s", { role: "user", content: "after the restart" });
  const events = await watcher.until(isMessage(after));
  assert.deepEqual(events[0], { type: "resync", afterMessageId: before }, "a resync from the last message id it gave");
  assert.deepEqual(messageIds(events), [during, after]);
});

test("a watcher that never reads its socket gets resync once it reads, and the daemon's memory stays flat meanwhile", async (t) => {
  const dbPath = freshDbPath(t);
  const daemon = await startDaemon(t, dbPath, { args: ["--watch-buffer-kb", "256"] });
  const db = await daemon.open(t);
  await db.createSession("s", "cli");
  const stalled = await RawConnection.open(t, daemon.socketPath);
  stalled.send({ id: 7, op: "watch", args: [{}] });
  await waitUntil("the watch is registered", async () => (await daemonStats(db)).watch.watchers === 1);
  const content = "x".repeat(64 * 1024);
  let last = 0;
  const write64MiB = async () => {
    for (let round = 0; round < 64; round++) {
      const ids = await Promise.all(Array.from({ length: 16 }, () => db.appendMessage("s", { role: "user", content })));
      last = Math.max(last, ...ids);
    }
  };
  // The same load once while the watcher reads (its socket is read into this process), so the
  // daemon's heap has grown to what the load needs.
  await write64MiB();
  // On a loaded machine this process may read slower than the daemon writes, and fall behind
  // here too: a resync then stands for the messages up to its id (none of them come after it).
  for (let seen = 0; seen < last; ) {
    const events = (await stalled.next()).chunk as WatchEvent[];
    seen = Math.max(seen, ...messageIds(events), ...events.flatMap((e) => (e.type === "resync" ? [e.afterMessageId] : [])));
  }
  const resyncsBefore = (await daemonStats(db)).watch.resyncs;
  stalled.pause();
  const rssBefore = (await daemonStats(db)).memory.rss;
  // 64 MiB of messages more: held for the stalled watcher, they would grow the daemon by as much.
  await write64MiB();
  const stats = await daemonStats(db);
  const grownMiB = (stats.memory.rss - rssBefore) / 1048576;
  assert.ok(stats.watch.resyncs > resyncsBefore, "the stalled watcher fell behind");
  assert.ok(grownMiB < 32, `the daemon's RSS grew by ${grownMiB.toFixed(1)} MiB while 64 MiB were written past a stalled watcher`);

  stalled.resume();
  let resync: Reply | undefined;
  for (;;) {
    const reply = await stalled.next();
    assert.equal(reply.id, 7);
    const events = reply.chunk as WatchEvent[];
    resync = events.find((e) => e.type === "resync") as Reply | undefined;
    if (resync !== undefined) break;
  }
  assert.equal((resync as unknown as { afterMessageId: number }).afterMessageId, last, "carry on after the newest message");
  const next = await db.appendMessage("s", { role: "user", content: "after the resync" });
  const reply = await stalled.next();
  assert.deepEqual(messageIds(reply.chunk as WatchEvent[]), [next], "then live again");
});

test("a client that goes away ends its subscriptions at once; unwatch ends one with its final reply first", async (t) => {
  const dbPath = freshDbPath(t);
  const daemon = await startDaemon(t, dbPath);
  const db = await daemon.open(t);
  await db.createSession("s", "cli");
  const gone = await RawConnection.open(t, daemon.socketPath);
  gone.send({ id: 1, op: "watch", args: [{}] }, { id: 2, op: "watch", args: [{ sessionId: "s" }] });
  await waitUntil("both watches are registered", async () => (await daemonStats(db)).watch.watchers === 2);
  gone.destroy();
  await waitUntil("the departed client's watches end", async () => (await daemonStats(db)).watch.watchers === 0);

  const raw = await RawConnection.open(t, daemon.socketPath);
  raw.send({ id: 5, op: "watch", args: [{ sessionId: "s", afterMessageId: 0 }] });
  const id = await db.appendMessage("s", { role: "user", content: "one" });
  assert.deepEqual(messageIds((await raw.next()).chunk as WatchEvent[]), [id]);
  // Other requests on the watch's connection are answered while it lives.
  assert.deepEqual(await raw.call(6, "ping"), { id: 6, ok: true, result: "pong" });
  raw.send({ id: 8, op: "unwatch", args: [5] });
  assert.deepEqual(await raw.next(), { id: 5, ok: true, result: null }, "the watch's final reply");
  assert.deepEqual(await raw.next(), { id: 8, ok: true, result: true });
  assert.deepEqual(await raw.call(9, "unwatch", [5]), { id: 9, ok: true, result: false }, "nothing left to end");
  const bad = await raw.call(10, "watch", [{ sessionId: "s", source: "cli" }]);
  assert.equal((bad.error as { code: string }).code, "INVALID_ARGUMENT");
});

test("a daemon that shuts down ends each watch with UNAVAILABLE", async (t) => {
  const dbPath = freshDbPath(t);
  const daemon = await startDaemon(t, dbPath);
  const raw = await RawConnection.open(t, daemon.socketPath);
  raw.send({ id: 3, op: "watch", args: [{}] });
  const db = await daemon.open(t);
  await waitUntil("the watch is registered", async () => (await daemonStats(db)).watch.watchers === 1);
  await db.close();
  const stopped = daemon.stop();
  const reply = await raw.next();
  assert.equal(reply.id, 3);
  assert.equal((reply.error as { code: string }).code, "UNAVAILABLE");
  assert.equal((await stopped).code, 0);
});

test("mode auto: a watcher whose daemon stops carries on in direct mode from its cursor, after a resync", async (t) => {
  const dbPath = freshDbPath(t);
  const daemon = await startDaemon(t, dbPath);
  const db = await openSessionDB({ path: dbPath, socketPath: daemon.socketPath, mode: "auto" });
  t.after(() => db.close());
  assert.equal(db.mode, "daemon");
  await db.createSession("s", "cli");
  const watcher = new Watcher(db, { sessionId: "s", afterMessageId: 0 });
  t.after(() => watcher.stop());
  const before = await db.appendMessage("s", { role: "user", content: "through the daemon" });
  await watcher.until(isMessage(before));

  assert.equal((await daemon.stop()).code, 0);
  const writer = await openSessionDB({ path: dbPath, mode: "direct" });
  t.after(() => writer.close());
  const after = await writer.appendMessage("s", { role: "user", content: "written with no daemon" });
  const events = await watcher.until(isMessage(after));
  assert.deepEqual(events[0], { type: "resync", afterMessageId: before }, "a resync from its cursor");
  assert.deepEqual(messageIds(events), [after]);
  assert.equal(db.mode, "direct", "the handle failed over");
});

test("a writer thread that dies and is replaced: watchers get a resync from the new thread's cursor, then live events", async (t) => {
  const dbPath = freshDbPath(t);
  const daemon = await startDaemon(t, dbPath, { env: { SESSIONDB_FAULT_INJECTION: "1" } });
  const db = await daemon.open(t);
  await db.createSession("s", "cli");
  const watcher = new Watcher(db, { sessionId: "s", afterMessageId: 0 });
  t.after(() => watcher.stop());
  const before = await db.appendMessage("s", { role: "user", content: "before" });
  await watcher.until(isMessage(before));
  await controlOf(db).fault("faultCrashWriter");
  await waitUntil("the writer thread is replaced", async () => (await daemonStats(db)).writer.restarts >= 1);
  const resync = await watcher.next();
  assert.deepEqual(resync, { type: "resync", afterMessageId: before }, "what the dead thread saw last is not known");
  const after = await db.appendMessage("s", { role: "user", content: "after" });
  assert.deepEqual(messageIds(await watcher.until(isMessage(after))), [after]);
});

test("writes group-committed in one batch reach a watcher in the order they ran, not the diff's fixed order", async (t) => {
  const dbPath = freshDbPath(t);
  const daemon = await startDaemon(t, dbPath);
  const db = await daemon.open(t);
  await db.createSession("a", "cli");
  // The lock holder's own session is of source python: not this watcher's.
  const watcher = new Watcher(db, { source: "cli", afterMessageId: 0 });
  t.after(() => watcher.stop());
  const sync = await db.appendMessage("a", { role: "user", content: "sync" });
  await watcher.until(isMessage(sync));
  // Another process holds the write lock while one client pipelines five writes: they wait in
  // the writer's queue and then commit in one transaction, which one look reads.
  const lock = await holdWriteLock(t, dbPath);
  const writes = [
    db.updateTokenCounts("a", { inputTokens: 5 }),
    db.createSession("b", "cli"),
    db.appendMessage("b", { role: "user", content: "in the batch" }),
    db.setSessionTitle("a", "Alpha"),
    db.updateSystemPrompt("a", "be brief"),
  ];
  await waitUntil("the five writes wait for the lock", async () => (await daemonStats(db)).writer.queueDepth >= writes.length);
  await lock.release();
  await Promise.all(writes);
  const events = await watcher.until((e) => e.type === "session" && e.change === "system_prompt");
  const label = (e: WatchEvent) => (e.type === "message" ? `message ${e.message.content}` : e.type === "session" ? `${e.change} ${e.sessionId}` : e.type);
  assert.deepEqual(events.map(label), ["tokens a", "created b", "message in the batch", "titled a", "system_prompt a"]);
});

test("writes to many sessions at once (pipelined, so group-committed together): each session's changes and messages reach a watcher once, in each session's order", async (t) => {
  const dbPath = freshDbPath(t);
  const daemon = await startDaemon(t, dbPath);
  const db = await daemon.open(t);
  // One client's pipelined writes to 40 sessions: one group commit names them all.
  const ids = Array.from({ length: 40 }, (_, i) => `s${i}`);
  await Promise.all(ids.map((id) => db.createSession(id, "cli")));
  const watcher = new Watcher(db, { afterMessageId: 0 });
  t.after(() => watcher.stop());
  await subscribed(db, watcher);
  const appended = await Promise.all(ids.map((id) => db.appendMessage(id, { role: "user", content: `to ${id}` })));
  await Promise.all(ids.map((id) => db.setSessionTitle(id, `title of ${id}`)));
  const last = await db.appendMessage("s0", { role: "user", content: "last" });
  const events = await watcher.until(isMessage(last));
  assert.deepEqual(messageIds(events), [...appended, last], "every message once, in commit order");
  for (const id of ids) {
    const own = events.filter((e) => (e.type === "session" && e.sessionId === id) || (e.type === "message" && e.message.session_id === id));
    const told = own.map((e) => (e.type === "session" ? `${e.change}:${e.session?.title}` : e.type === "message" ? `message:${e.message.content}` : e.type));
    assert.deepEqual(told.slice(0, 2), [`message:to ${id}`, `titled:title of ${id}`], `${id}: its message, then its title once`);
  }
});

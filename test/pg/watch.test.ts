/**
 * `watch` on PostgreSQL (issue 26): the feed LISTENs for what write transactions NOTIFY
 * (src/pg/pg-change-notes.ts, pg-change-feed.ts). Writes by this process and by other processes
 * (the CLI in direct mode, a daemon) are seen, in commit order; the cursor replays the table
 * with no gap and no duplicate; a watcher that stops reading gets `resync`.
 */
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { test, type TestContext } from "node:test";
import { openSessionDB, type SessionDB } from "../../src/index.js";
import { openPgPool } from "../../src/pg/pg-connection.js";
import { PgChangeFeed, MAX_QUEUED } from "../../src/pg/pg-change-feed.js";
import { PgChangeNotes } from "../../src/pg/pg-change-notes.js";
import type { WatchEvent } from "../../src/watch-types.js";
import { runCli, ServeProcess } from "../helpers/cli.js";
import { shortTempDir } from "../helpers/daemon.js";
import { usePgServer } from "../helpers/postgres.js";
import { waitUntil } from "../helpers/wait-until.js";

const server = usePgServer();

async function feedOn(t: TestContext, url: string): Promise<PgChangeFeed> {
  const pool = await openPgPool(url, { max: 2, applicationName: "watch test" });
  const feed = await PgChangeFeed.open(url, pool, "watch test");
  t.after(async () => {
    await feed.close();
    await pool.end();
  });
  return feed;
}

/** Collects a subscription's events as they come, until the test ends it. */
function collect(t: TestContext, events: AsyncIterable<WatchEvent>): WatchEvent[] {
  const seen: WatchEvent[] = [];
  const done = (async () => {
    for await (const event of events) seen.push(event);
  })();
  t.after(() => done.catch(() => undefined));
  return seen;
}

const label = (e: WatchEvent) =>
  e.type === "message" ? `message ${e.message.content}` : e.type === "session" ? `${e.change} ${e.sessionId}` : `resync ${e.afterMessageId}`;

async function direct(t: TestContext, url: string): Promise<SessionDB> {
  const db = await openSessionDB({ path: url, mode: "direct" });
  t.after(() => db.close());
  return db;
}

test("a direct handle's writes reach a watcher as events in commit order, every change of a session named", async (t) => {
  const url = server.fresh(t);
  const db = await direct(t, url);
  const feed = await feedOn(t, url);
  const stop = new AbortController();
  t.after(() => stop.abort());
  const all = collect(t, feed.subscribe({ sessionId: null, source: null, afterMessageId: null }, stop.signal));
  const one = collect(t, feed.subscribe({ sessionId: "a", source: null, afterMessageId: null }, stop.signal));
  await waitUntil("both watchers are registered", () => feed.watchers === 2);
  // Each write's event is waited for before the next write: notifications heard together are
  // read on one snapshot, where an end then a reopen (or a clear then a delete) compare as one
  // change or none (docs/postgres.md); "changes read together…" below covers that case.
  const steps: [() => Promise<unknown>, number][] = [
    [() => db.createSession("a", "cli"), 1],
    [() => db.createSession("b", "telegram"), 1],
    [() => db.appendMessage("a", { role: "user", content: "hello" }), 2],
    [() => db.appendMessage("b", { role: "user", content: "other" }), 2],
    [() => db.updateTokenCounts("a", { inputTokens: 5 }), 3],
    [() => db.setSessionTitle("a", "Alpha"), 4],
    [() => db.updateSystemPrompt("a", "be brief"), 5],
    [() => db.endSession("a", "done"), 6],
    [() => db.endSession("a", "again"), 6], // the first end wins: no change, no event
    [() => db.reopenSession("a"), 7],
    [() => db.clearMessages("a"), 8],
    [() => db.deleteSession("a"), 9],
  ];
  for (const [write, told] of steps) {
    await write();
    await waitUntil(`the watcher of a was told ${told} events`, () => one.length >= told);
  }
  const expected = ["created a", "message hello", "tokens a", "titled a", "system_prompt a", "ended a", "reopened a", "cleared a", "deleted a"];
  assert.deepEqual(one.map(label), expected);
  await waitUntil("the watcher of all saw it deleted", () => all.some((e) => label(e) === "deleted a"));
  assert.deepEqual(all.map(label), ["created a", "created b", "message hello", "message other", ...expected.slice(2)]);
  const message = all[2]!;
  assert.ok(message.type === "message" && message.message.session_id === "a" && typeof message.message.timestamp === "number");
  const ended = one[5]!;
  assert.ok(ended.type === "session" && ended.session?.end_reason === "done");
  const deleted = one.at(-1)!;
  assert.ok(deleted.type === "session" && deleted.session === null);
});

test("writes by other processes (the CLI in direct mode, a daemon) are seen; the cursor replays with no gap or duplicate", async (t) => {
  const url = server.fresh(t);
  const db = await direct(t, url);
  await db.createSession("s", "cli");
  const first = await db.appendMessage("s", { role: "user", content: "one" });
  await db.appendMessage("s", { role: "user", content: "two" });
  const feed = await feedOn(t, url);
  const stop = new AbortController();
  t.after(() => stop.abort());
  const watched = collect(t, feed.subscribe({ sessionId: null, source: "cli", afterMessageId: first }, stop.signal));
  await waitUntil("the replay", () => watched.length === 1);
  assert.deepEqual(watched.map(label), ["message two"]);
  const title = await runCli(url, ["--direct", "title", "s", "From", "the", "CLI"]);
  assert.equal(title.code, 0, title.stderr);
  await waitUntil("the CLI's title", () => watched.some((e) => label(e) === "titled s"));
  const line = { ...(await db.exportSession("s"))!, id: "imported", title: null, messages: [{ ...(await db.getMessages("s"))[0]!, id: null, session_id: "imported", content: "imported one" }] };
  const file = join(shortTempDir(t), "import.jsonl");
  writeFileSync(file, `${JSON.stringify(line)}\n`);
  const imported = await runCli(url, ["--direct", "import", file]);
  assert.equal(imported.code, 0, imported.stderr);
  await waitUntil("the imported session and its message", () => watched.some((e) => label(e) === "message imported one"));
  const serve = await ServeProcess.start(url);
  t.after(() => serve.stop());
  const viaDaemon = await openSessionDB({ path: url, mode: "daemon" });
  t.after(() => viaDaemon.close());
  await viaDaemon.appendMessage("s", { role: "assistant", content: "through the daemon" });
  await viaDaemon.createSession("tg", "telegram");
  await viaDaemon.appendMessage("tg", { role: "user", content: "not cli" });
  await viaDaemon.endSession("s", "bye");
  await waitUntil("the daemon's writes", () => watched.some((e) => label(e) === "ended s"));
  assert.deepEqual(watched.map(label), ["message two", "titled s", "created imported", "message imported one", "message through the daemon", "ended s"]);
  const ids = watched.flatMap((e) => (e.type === "message" ? [e.message.id] : []));
  assert.equal(new Set(ids).size, ids.length, "no message twice");
});

test("a watcher that stops reading has its queue dropped and gets resync, then the messages past its cursor", async (t) => {
  const url = server.fresh(t);
  const db = await direct(t, url);
  await db.createSession("s", "cli");
  const feed = await feedOn(t, url);
  const stop = new AbortController();
  t.after(() => stop.abort());
  const iterator = feed.subscribe({ sessionId: null, source: null, afterMessageId: null }, stop.signal)[Symbol.asyncIterator]();
  const firstEvent = iterator.next(); // registered; then not read while the import lands
  await waitUntil("registered", () => feed.watchers === 1);
  const messages = Array.from({ length: MAX_QUEUED + 10 }, (_, i) => ({
    id: null, session_id: "big", role: "user", content: `m${i}`, tool_call_id: null, tool_calls: null, tool_name: null,
    timestamp: 1_800_000_000 + i, token_count: null, finish_reason: null, reasoning: null, reasoning_details: null, codex_reasoning_items: null,
  }));
  const session = { ...(await db.exportSession("s"))!, id: "big", messages };
  assert.equal((await db.importSession(session as never)).status, "imported");
  const got: WatchEvent[] = [(await firstEvent).value as WatchEvent];
  while (got.filter((e) => e.type === "message").length < messages.length) {
    const next = await iterator.next();
    assert.equal(next.done, false);
    got.push(next.value as WatchEvent);
  }
  const resync = got.findIndex((e) => e.type === "resync");
  assert.ok(resync >= 0, "the overflow was told");
  const contents = got.flatMap((e) => (e.type === "message" ? [e.message.content] : []));
  assert.deepEqual(contents, messages.map((m) => m.content), "every message once, in order, across the resync");
  await iterator.return?.(undefined);
});

test("a notification's payload stays under PostgreSQL's limit: many ids go in several, a huge session id as a reread", () => {
  const notes = new PgChangeNotes();
  const db = { query: async () => ({ rows: [], rowCount: 0 }) };
  return (async () => {
    for (let i = 0; i < 3000; i++) await notes.note(db, "appendMessage", { sessionId: "s" }, 1_000_000_000_000 + i);
    await notes.note(db, "endSession", { id: "s" }, null);
    const payloads = notes.payloads();
    assert.ok(payloads.length > 1);
    for (const p of payloads) assert.ok(Buffer.byteLength(p) < 8000, `${Buffer.byteLength(p)} bytes`);
    assert.deepEqual(JSON.parse(payloads[0]!), { s: ["s"] });
    assert.equal(payloads.slice(1).flatMap((p) => (JSON.parse(p) as { m: number[] }).m).length, 3000);
    notes.clear();
    await notes.note(db, "setSessionTitle", { id: "é".repeat(4096) }, true);
    assert.deepEqual(notes.payloads(), ['{"r":1}']);
  })();
});

test("changes read together are told in the order they were made, not the diff's fixed order", async (t) => {
  const url = server.fresh(t);
  const db = await direct(t, url);
  await db.createSession("a", "cli");
  const feed = await feedOn(t, url);
  const stop = new AbortController();
  t.after(() => stop.abort());
  const seen = collect(t, feed.subscribe({ sessionId: "a", source: null, afterMessageId: null }, stop.signal));
  await waitUntil("registered", () => feed.watchers === 1);
  // One transaction of three writes (as the daemon's group commit makes): one look sees all three.
  const pool = await openPgPool(url, { max: 1, applicationName: "watch test writer" });
  t.after(() => pool.end());
  const client = await pool.connect();
  try {
    const notes = new PgChangeNotes();
    await client.query("BEGIN");
    await client.query("UPDATE sessions SET input_tokens = 5 WHERE id = 'a'");
    await notes.note(client, "updateTokenCounts", { params: { id: "a" } }, null);
    await client.query("UPDATE sessions SET title = 'Alpha' WHERE id = 'a'");
    await notes.note(client, "setSessionTitle", { id: "a" }, true);
    await client.query("UPDATE sessions SET system_prompt = 'be brief' WHERE id = 'a'");
    await notes.note(client, "updateSystemPrompt", { id: "a" }, null);
    assert.deepEqual(JSON.parse(notes.payloads()[0]!), { s: ["a"], c: [[0, "tokens"], [0, "titled"], [0, "system_prompt"]] });
    await notes.send(client);
    await client.query("COMMIT");
  } finally {
    client.release();
  }
  await waitUntil("three changes", () => seen.length >= 3);
  assert.deepEqual(seen.map(label), ["tokens a", "titled a", "system_prompt a"]);
});

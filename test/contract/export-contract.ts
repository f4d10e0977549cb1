/** exportSession and the streamed exportAll (SPEC §3). */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { SessionDB } from "../../src/index.js";
import { rawWrite } from "../helpers/raw-db.js";
import { drain, fresh, MESSAGE_KEYS, setSession, SESSION_KEYS, sortedKeys, T0, type Opener } from "./fixture.js";

const BULK_SESSIONS = 260;
/** The newest session alone holds more messages than any sensible page. */
const GIANT_MESSAGES = 5_100;
/** The ten oldest sessions are heavy, so a page also fills up with messages near the end. */
const HEAVY_SESSIONS = 10;
const HEAVY_MESSAGES = 600;
const LIGHT_MESSAGES = 2;
const BULK_MESSAGES = GIANT_MESSAGES + HEAVY_SESSIONS * HEAVY_MESSAGES + (BULK_SESSIONS - HEAVY_SESSIONS - 1) * LIGHT_MESSAGES;

function messagesOfBulk(i: number): number {
  if (i === BULK_SESSIONS - 1) return GIANT_MESSAGES;
  return i < HEAVY_SESSIONS ? HEAVY_MESSAGES : LIGHT_MESSAGES;
}

/**
 * 260 sessions and 11,598 messages written by a raw connection in one transaction: more than
 * one page of sessions and of messages whatever the page sizes are, one session bigger than a
 * page, and heavy sessions on the last page. Start times come in groups of seven equal values,
 * so paging must break ties. Returns each session's message count.
 */
function bulkInsert(dbPath: string): Map<string, number> {
  const expected = new Map<string, number>();
  rawWrite(dbPath, (raw) => {
    const session = raw.prepare(
      "INSERT INTO sessions (id, source, started_at, message_count, parent_session_id) VALUES (?, ?, ?, ?, ?)",
    );
    const message = raw.prepare("INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, ?, ?, ?)");
    for (let i = 0; i < BULK_SESSIONS; i++) {
      const id = `bulk-${String(i).padStart(3, "0")}`;
      const messages = messagesOfBulk(i);
      const startedAt = T0 + Math.floor(i / 7);
      const parent = i % 5 === 4 ? `bulk-${String(i - 1).padStart(3, "0")}` : null;
      session.run(id, i % 2 === 0 ? "cli" : "telegram", startedAt, messages, parent);
      for (let j = 0; j < messages; j++) {
        message.run(id, j % 2 === 0 ? "user" : "assistant", `${id} message ${j}`, startedAt + j / 10_000);
      }
      expected.set(id, messages);
    }
  });
  return expected;
}

export function exportContract(open: Opener): void {
  describe("exportSession", () => {
    test("null when missing; else the row plus its messages as getMessages gives them", async (t) => {
      const { db } = await fresh(t, open);
      assert.equal(await db.exportSession("ghost"), null);
      await db.createSession("s", "cli", { model: "m", modelConfig: { k: 1 } });
      await db.appendMessage("s", { role: "user", content: "hi" });
      await db.appendMessage("s", { role: "assistant", content: "yo", toolCalls: [{ id: 1 }], reasoningDetails: [{ r: 1 }] });
      await db.setSessionTitle("s", "Exported");
      const exported = await db.exportSession("s");
      assert.ok(exported);
      assert.deepEqual(sortedKeys(exported), [...SESSION_KEYS, "messages"].sort());
      const { messages, ...row } = exported;
      assert.deepEqual(row, await db.getSession("s"));
      assert.deepEqual(messages, await db.getMessages("s"));
      assert.equal(messages.length, 2);
      assert.deepEqual(sortedKeys(messages[1]!), MESSAGE_KEYS);
      assert.deepEqual(messages[1]!.tool_calls, [{ id: 1 }]);
      assert.equal(exported.title, "Exported");
    });
  });

  describe("exportAll", () => {
    test("an empty database exports nothing", async (t) => {
      const { db } = await fresh(t, open);
      const iterable = db.exportAll();
      assert.equal(typeof iterable[Symbol.asyncIterator], "function");
      assert.deepEqual(await drain(iterable), []);
    });

    test("every session with its messages, newest first, children included, with a source filter", async (t) => {
      const { db, path } = await fresh(t, open);
      await db.createSession("root", "cli");
      await db.createSession("child", "cli", { parentSessionId: "root" });
      await db.createSession("other", "telegram");
      await db.appendMessage("child", { role: "user", content: "from the child" });
      await db.appendMessage("root", { role: "user", content: "from the root", toolCalls: [{ id: 1 }] });
      setSession(path, "root", { started_at: T0 });
      setSession(path, "child", { started_at: T0 + 10 });
      setSession(path, "other", { started_at: T0 + 5 });
      const all = await drain(db.exportAll());
      assert.deepEqual(all.map((s) => s.id), ["child", "other", "root"]);
      assert.deepEqual(all[2], await db.exportSession("root"));
      assert.deepEqual(all[0]!.messages.map((m) => m.content), ["from the child"]);
      assert.deepEqual(all[1]!.messages, []);
      assert.deepEqual((await drain(db.exportAll({ source: "cli" }))).map((s) => s.id), ["child", "root"]);
      assert.deepEqual(await drain(db.exportAll({ source: "none" })), []);
    });

    test("streams more than 200 sessions and 5,000 messages completely, once each, newest first", async (t) => {
      const { db, path } = await fresh(t, open);
      const expected = bulkInsert(path);
      const seen = new Map<string, number>();
      let previousStart = Infinity;
      let messages = 0;
      for await (const session of db.exportAll()) {
        assert.ok(!seen.has(session.id), `${session.id} exported twice`);
        assert.ok(session.started_at <= previousStart, "newest first");
        previousStart = session.started_at;
        assert.equal(session.messages.length, session.message_count, session.id);
        assert.equal(session.messages[0]?.content, `${session.id} message 0`);
        assert.equal(session.messages.at(-1)?.content, `${session.id} message ${session.message_count - 1}`);
        seen.set(session.id, session.messages.length);
        messages += session.messages.length;
      }
      assert.equal(seen.size, BULK_SESSIONS);
      assert.deepEqual(seen, expected);
      assert.equal(messages, BULK_MESSAGES);
      const cli = await drain(db.exportAll({ source: "cli" }));
      assert.equal(cli.length, BULK_SESSIONS / 2);
      assert.ok(cli.every((s) => s.source === "cli"));
    });

    test("one snapshot: what is written, created or deleted while it streams is not in it; counters match messages", async (t) => {
      const { db, path } = await fresh(t, open);
      // Many pages of small sessions: far more than the socket's buffers hold, so in daemon mode
      // the last pages are read after the writes below.
      const SESSIONS = 1200;
      const id = (i: number) => `snap-${String(i).padStart(4, "0")}`;
      rawWrite(path, (raw) => {
        const session = raw.prepare("INSERT INTO sessions (id, source, started_at, message_count) VALUES (?, 'cli', ?, 1)");
        const message = raw.prepare("INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, 'user', ?, ?)");
        for (let i = 0; i < SESSIONS; i++) {
          session.run(id(i), T0 + i);
          message.run(id(i), `${id(i)} `.padEnd(2500, "x"), T0 + i);
        }
      });
      const seen = new Map<string, number>();
      for await (const session of db.exportAll()) {
        if (seen.size === 0) {
          // The export has begun: the oldest sessions (its last page) change now, written by
          // another process (a daemon client's own replies would wait behind the export's pages,
          // which it reads only as fast as they are consumed).
          rawWrite(path, (raw) => {
            raw.prepare("INSERT INTO messages (session_id, role, content, tool_calls, timestamp) VALUES (?, 'assistant', 'after the export began', '[{\"id\": 1}]', ?)").run(id(0), T0 + SESSIONS);
            raw.prepare("UPDATE sessions SET message_count = message_count + 1, tool_call_count = tool_call_count + 1 WHERE id = ?").run(id(0));
          });
          rawWrite(path, (raw) => {
            raw.prepare("DELETE FROM messages WHERE session_id = ?").run(id(1));
            raw.prepare("DELETE FROM sessions WHERE id = ?").run(id(1));
          });
          rawWrite(path, (raw) => {
            raw.prepare("INSERT INTO sessions (id, source, started_at, message_count) VALUES ('late', 'cli', ?, 1)").run(T0 - 1);
            raw.prepare("INSERT INTO messages (session_id, role, content, timestamp) VALUES ('late', 'user', 'late', ?)").run(T0 - 1);
          });
        }
        assert.ok(!seen.has(session.id), `${session.id} exported twice`);
        assert.equal(session.messages.length, session.message_count, `${session.id}: message_count`);
        assert.equal(toolCallsOf(session.messages), session.tool_call_count, `${session.id}: tool_call_count`);
        seen.set(session.id, session.messages.length);
      }
      assert.equal(seen.size, SESSIONS, "exactly the sessions there were when the export began");
      assert.ok(!seen.has("late"), "a session created after the export began is not in it");
      assert.ok(seen.has(id(1)), "a session deleted after the export began is in it");
      assert.equal(seen.get(id(0)), 1, "a message appended after the export began is not in it");
      const after = await db.exportSession(id(0));
      assert.equal(after?.messages.length, 2);
      assert.equal(after?.message_count, 2);
      assert.equal(after?.tool_call_count, 1);
    });

    test("stopping early leaves the handle usable and close() does not hang", async (t) => {
      const { db, path } = await fresh(t, open);
      bulkInsert(path);
      let taken = 0;
      for await (const session of db.exportAll()) {
        assert.ok(session.id.startsWith("bulk-"));
        if (++taken === 3) break;
      }
      assert.equal(await db.sessionCount(), BULK_SESSIONS);
      await closeWithin(db, 5000);
    });
  });
}

/** How many tool calls messages hold, as the store counts them (an array counts its elements). */
export function toolCallsOf(messages: ReadonlyArray<{ tool_calls: unknown }>): number {
  let calls = 0;
  for (const m of messages) {
    if (m.tool_calls === null || m.tool_calls === undefined) continue;
    const value: unknown = typeof m.tool_calls === "string" ? JSON.parse(m.tool_calls) : m.tool_calls;
    calls += Array.isArray(value) ? value.length : 1;
  }
  return calls;
}

async function closeWithin(db: SessionDB, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`close() did not finish within ${ms} ms`)), ms);
  });
  try {
    await Promise.race([db.close(), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

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

/** close(), and the argument checks every method shares (SPEC §2, §8). */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { SessionDB, SessionExport } from "../../src/index.js";
import { rawAll, rawGet } from "../helpers/raw-db.js";
import { drain, expectCode, fresh, type Opener } from "./fixture.js";

type MethodName = Exclude<keyof SessionDB, "mode" | "engine" | "files" | "daemon" | "close">;

/** A session as `exportAll` gives it, for the one call that takes a whole export. */
const EXPORTED: SessionExport = {
  id: "imported", source: "cli", user_id: null, model: null, model_config: null, system_prompt: null,
  parent_session_id: null, started_at: 1_700_000_000, ended_at: null, end_reason: null, message_count: 0,
  tool_call_count: 0, input_tokens: 0, output_tokens: 0, cache_read_tokens: 0, cache_write_tokens: 0,
  reasoning_tokens: 0, billing_provider: null, billing_base_url: null, billing_mode: null, estimated_cost_usd: null,
  actual_cost_usd: null, cost_status: null, cost_source: null, pricing_version: null, title: null, messages: [],
};

/** One valid call of every method of `SessionDB` (the compiler makes sure none is missing). */
const EVERY_METHOD = Object.entries({
  createSession: (db) => db.createSession("x", "cli"),
  ensureSession: (db) => db.ensureSession("x"),
  endSession: (db) => db.endSession("s", "done"),
  reopenSession: (db) => db.reopenSession("s"),
  updateSystemPrompt: (db) => db.updateSystemPrompt("s", "p"),
  updateTokenCounts: (db) => db.updateTokenCounts("s", { inputTokens: 1 }),
  getSession: (db) => db.getSession("s"),
  resolveSessionId: (db) => db.resolveSessionId("s"),
  sessionIdsByPrefix: (db) => db.sessionIdsByPrefix("s"),
  setSessionTitle: (db) => db.setSessionTitle("s", "t"),
  getSessionTitle: (db) => db.getSessionTitle("s"),
  getSessionByTitle: (db) => db.getSessionByTitle("t"),
  resolveSessionByTitle: (db) => db.resolveSessionByTitle("t"),
  getNextTitleInLineage: (db) => db.getNextTitleInLineage("t"),
  getCompressionTip: (db) => db.getCompressionTip("s"),
  listSessionsRich: (db) => db.listSessionsRich(),
  appendMessage: (db) => db.appendMessage("s", { role: "user", content: "hi" }),
  getMessages: (db) => db.getMessages("s"),
  getMessagesAsConversation: (db) => db.getMessagesAsConversation("s"),
  clearMessages: (db) => db.clearMessages("s"),
  popMessage: (db) => db.popMessage("s"),
  searchMessages: (db) => db.searchMessages("hello"),
  searchSessions: (db) => db.searchSessions(),
  sessionCount: (db) => db.sessionCount(),
  messageCount: (db) => db.messageCount(),
  sourceCounts: (db) => db.sourceCounts(),
  exportSession: (db) => db.exportSession("s"),
  exportAll: (db) => drain(db.exportAll()),
  importSession: (db) => db.importSession(EXPORTED),
  deleteSession: (db) => db.deleteSession("s"),
  pruneSessions: (db) => db.pruneSessions(),
  watch: (db) => drain(db.watch()),
} satisfies Record<MethodName, (db: SessionDB) => PromiseLike<unknown>>) as Array<
  [MethodName, (db: SessionDB) => PromiseLike<unknown>]
>;

// Loose-typed calls: what a JavaScript caller (or a client in another language) may send.
type Loose = (...args: unknown[]) => Promise<unknown>;
const loose = (db: SessionDB, method: keyof SessionDB): Loose =>
  (db[method] as unknown as Loose).bind(db);

const iteratedLoose = (db: SessionDB, method: "exportAll" | "watch") => db[method].bind(db) as (...args: unknown[]) => AsyncIterable<unknown>;
const isIterated = (method: MethodName): method is "exportAll" | "watch" => method === "exportAll" || method === "watch";

const WRONG_ARGUMENTS: ReadonlyArray<readonly [string, keyof SessionDB, unknown[]]> = [
  ["number as id", "getSession", [42]],
  ["missing id", "getMessages", []],
  ["number as source", "createSession", ["s2", 5]],
  ["array as id", "createSession", [["s2"], "cli"]],
  ["number as ensureSession id", "ensureSession", [7]],
  ["missing end reason", "endSession", ["s"]],
  ["string as message", "appendMessage", ["s", "hello"]],
  ["message without role", "appendMessage", ["s", { content: "hello" }]],
  ["number as role", "appendMessage", ["s", { role: 5, content: "hello" }]],
  ["number as content", "appendMessage", ["s", { role: "user", content: 5 }]],
  ["fractional token count", "appendMessage", ["s", { role: "user", tokenCount: 1.5 }]],
  ["string as token count", "updateTokenCounts", ["s", { inputTokens: "5" }]],
  ["string as absolute flag", "updateTokenCounts", ["s", { inputTokens: 5 }, { absolute: "yes" }]],
  ["number as title", "setSessionTitle", ["s", 5]],
  ["null query", "searchMessages", [null]],
  ["string as limit", "searchMessages", ["hello", { limit: "5" }]],
  ["negative limit", "searchMessages", ["hello", { limit: -1 }]],
  ["fractional limit", "searchMessages", ["hello", { limit: 1.5 }]],
  ["negative offset", "searchMessages", ["hello", { offset: -1 }]],
  ["array of numbers as roleFilter", "searchMessages", ["hello", { roleFilter: [1, 2] }]],
  ["string as sourceFilter", "searchMessages", ["hello", { sourceFilter: "cli" }]],
  ["string as listing limit", "listSessionsRich", [{ limit: "10" }]],
  ["negative listing offset", "listSessionsRich", [{ offset: -1 }]],
  ["string as includeChildren", "listSessionsRich", [{ includeChildren: "yes" }]],
  ["number as excludeSources", "listSessionsRich", [{ excludeSources: 3 }]],
  ["string as searchSessions limit", "searchSessions", [{ limit: "2" }]],
  ["number as sessionCount source", "sessionCount", [{ source: 1 }]],
  ["number as messageCount sessionId", "messageCount", [{ sessionId: 1 }]],
  ["string as olderThanDays", "pruneSessions", [{ olderThanDays: "90" }]],
  ["negative olderThanDays", "pruneSessions", [{ olderThanDays: -1 }]],
  ["number as lineage base", "getNextTitleInLineage", [5]],
  ["number as prefix", "resolveSessionId", [5]],
];

export function lifecycleContract(open: Opener): void {
  describe("close", () => {
    test("close() is idempotent", async (t) => {
      const { db } = await fresh(t, open);
      await db.close();
      await db.close();
      await Promise.all([db.close(), db.close()]);
    });

    test("every method rejects with CLOSED after close(), exportAll included", async (t) => {
      const { db } = await fresh(t, open);
      await db.createSession("s", "cli");
      await db.close();
      for (const [name, call] of EVERY_METHOD) {
        await t.test(name, async () => {
          await expectCode(() => call(db), "CLOSED");
        });
      }
    });

    test("a call made while close() is pending rejects with CLOSED", async (t) => {
      const { db } = await fresh(t, open);
      const closing = db.close();
      // expectCode attaches its handler now, so the rejection is never unhandled however
      // long close() takes; Promise.all watches both from here on.
      const late = expectCode(() => db.getSession("s"), "CLOSED");
      await Promise.all([closing, late]);
    });

    test("close() lets writes already issued finish and commit", async (t) => {
      const { db, path } = await fresh(t, open);
      const created = db.createSession("q", "cli");
      const appended = db.appendMessage("q", { role: "user", content: "queued before close" });
      const closing = db.close();
      assert.equal(await created, "q");
      assert.equal(typeof (await appended), "number");
      await closing;
      const row = rawGet<{ message_count: number }>(path, "SELECT message_count FROM sessions WHERE id = 'q'");
      assert.equal(row?.message_count, 1);
      assert.deepEqual(rawAll(path, "SELECT content FROM messages"), [{ content: "queued before close" }]);
    });
  });

  describe("argument checking", () => {
    test("wrong argument types reject with INVALID_ARGUMENT and write nothing", async (t) => {
      const { db, path } = await fresh(t, open);
      await db.createSession("s", "cli");
      for (const [label, method, args] of WRONG_ARGUMENTS) {
        await t.test(label, async () => {
          await expectCode(() => loose(db, method)(...args), "INVALID_ARGUMENT");
        });
      }
      assert.deepEqual(rawAll(path, "SELECT id FROM sessions"), [{ id: "s" }]);
      assert.deepEqual(rawAll(path, "SELECT id FROM messages"), []);
      const row = await db.getSession("s");
      assert.equal(row?.input_tokens, 0);
      assert.equal(row?.title, null);
      assert.equal(row?.ended_at, null);
    });

    test("every method given a number as its first argument rejects (never throws) with INVALID_ARGUMENT", async (t) => {
      const { db } = await fresh(t, open);
      for (const [method] of EVERY_METHOD) {
        await t.test(method, async () => {
          await expectCode(
            () => (isIterated(method) ? drain(iteratedLoose(db, method)(7)) : loose(db, method)(7)),
            "INVALID_ARGUMENT",
          );
        });
      }
      assert.equal(await db.sessionCount(), 0);
    });

    test("every method given more arguments than it takes rejects with INVALID_ARGUMENT naming that method", async (t) => {
      const { db } = await fresh(t, open);
      const tooMany = ["x", "x", "x", "x", "x"];
      for (const [method] of EVERY_METHOD) {
        await t.test(method, async () => {
          const err = await expectCode(
            () => (isIterated(method) ? drain(iteratedLoose(db, method)(...tooMany)) : loose(db, method)(...tooMany)),
            "INVALID_ARGUMENT",
          );
          assert.match(err.message, new RegExp(`^${method} takes at most [0-4] arguments, got 5$`));
        });
      }
      assert.equal(await db.sessionCount(), 0);
    });

    test("exportAll with a wrong option type rejects with INVALID_ARGUMENT", async (t) => {
      const { db } = await fresh(t, open);
      await expectCode(() => drain(iteratedLoose(db, "exportAll")({ source: 5 })), "INVALID_ARGUMENT");
    });

    test("an id longer than 4096 characters is INVALID_ARGUMENT; exactly 4096 is accepted", async (t) => {
      const { db } = await fresh(t, open);
      const long = "x".repeat(4097);
      await expectCode(() => db.createSession(long, "cli"), "INVALID_ARGUMENT");
      await expectCode(() => db.getSession(long), "INVALID_ARGUMENT");
      await expectCode(() => db.resolveSessionId("y".repeat(100_000)), "INVALID_ARGUMENT");
      await expectCode(() => db.appendMessage(long, { role: "user", content: "hi" }), "INVALID_ARGUMENT");
      assert.equal(await db.sessionCount(), 0);
      const max = "z".repeat(4096);
      assert.equal(await db.createSession(max, "cli"), max);
      assert.equal((await db.getSession(max))?.id, max);
    });

    test("a message that cannot be serialized as JSON is INVALID_ARGUMENT and writes nothing", async (t) => {
      const { db } = await fresh(t, open);
      await db.createSession("s", "cli");
      const circular: Record<string, unknown> = { name: "loop" };
      circular.self = circular;
      await expectCode(() => db.appendMessage("s", { role: "assistant", toolCalls: [circular] }), "INVALID_ARGUMENT");
      assert.equal(await db.messageCount(), 0);
      assert.equal((await db.getSession("s"))?.message_count, 0);
    });

    test("errors are SessionDBError instances with a stable code and a readable message", async (t) => {
      const { db } = await fresh(t, open);
      const err = await expectCode(() => db.appendMessage("nope", { role: "user", content: "x" }), "CONSTRAINT");
      assert.equal(err.name, "SessionDBError");
      assert.ok(err.message.length > 0);
    });
  });
}

/** importSession, sourceCounts and sessionIdsByPrefix: the operations `sessiondb import`, `stats` and id prefixes use. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { ImportResult, MessageRow, SessionDB, SessionExport } from "../../src/index.js";
import { rawAll, rawWrite } from "../helpers/raw-db.js";
import { expectCode, fresh, setSession, T0, type Opener } from "./fixture.js";

/** An exported session with every column at its default, as `exportAll` gives a bare session. */
function exported(id: string, messages: MessageRow[] = [], columns: Partial<SessionExport> = {}): SessionExport {
  return {
    id, source: "cli", user_id: null, model: null, model_config: null, system_prompt: null, parent_session_id: null,
    started_at: T0, ended_at: null, end_reason: null, message_count: messages.length, tool_call_count: 0,
    input_tokens: 0, output_tokens: 0, cache_read_tokens: 0, cache_write_tokens: 0, reasoning_tokens: 0,
    billing_provider: null, billing_base_url: null, billing_mode: null, estimated_cost_usd: null, actual_cost_usd: null,
    cost_status: null, cost_source: null, pricing_version: null, title: null, messages, ...columns,
  };
}

/** An exported message of session `sessionId`. */
function message(sessionId: string, id: number, timestamp: number, columns: Partial<MessageRow> = {}): MessageRow {
  return {
    id, session_id: sessionId, role: "user", content: `message ${id}`, tool_call_id: null, tool_calls: null,
    tool_name: null, timestamp, token_count: null, finish_reason: null, reasoning: null, reasoning_details: null,
    codex_reasoning_items: null, ...columns,
  };
}

const IMPORTED: ImportResult = { status: "imported", messages: 0, renumbered: false, parentDetached: false };
const NOTHING_WRITTEN = { messages: 0, renumbered: false, parentDetached: false } as const;

// What a JavaScript caller (or a client in another language) may send.
type LooseImport = (...args: unknown[]) => Promise<unknown>;
const looseImport = (db: SessionDB) => db.importSession.bind(db) as LooseImport;
const looseIdsByPrefix = (db: SessionDB) => db.sessionIdsByPrefix.bind(db) as LooseImport;

function without<T extends object>(value: T, key: keyof T): Partial<T> {
  const copy: Partial<T> = { ...value };
  delete copy[key];
  return copy;
}

const GOOD = exported("new", [message("new", 10, T0), message("new", 11, T0 + 1)]);

/** Malformed sessions (and options) `importSession` must refuse before writing anything. */
const MALFORMED: ReadonlyArray<readonly [string, unknown[]]> = [
  ["null session", [null]],
  ["string session", [JSON.stringify(GOOD)]],
  ["number as id", [{ ...GOOD, id: 5 }]],
  ["empty id", [{ ...GOOD, id: "" }]],
  ["missing source", [without(GOOD, "source")]],
  ["missing started_at", [without(GOOD, "started_at")]],
  ["string as started_at", [{ ...GOOD, started_at: String(T0) }]],
  ["object as model_config", [{ ...GOOD, model_config: { temperature: 1 } }]],
  ["string as input_tokens", [{ ...GOOD, input_tokens: "5" }]],
  ["messages missing", [without(GOOD, "messages")]],
  ["messages not an array", [{ ...GOOD, messages: "[]" }]],
  ["messages an object", [{ ...GOOD, messages: { 0: GOOD.messages[0] } }]],
  ["string as a message", [{ ...GOOD, messages: ["hello"] }]],
  ["message without role", [{ ...GOOD, messages: [without(message("new", 1, T0), "role")] }]],
  ["number as role", [{ ...GOOD, messages: [message("new", 1, T0, { role: 5 as unknown as string })] }]],
  ["message without timestamp", [{ ...GOOD, messages: [without(message("new", 1, T0), "timestamp")] }]],
  ["fractional message id", [{ ...GOOD, messages: [message("new", 1.5, T0)] }]],
  ["zero message id", [{ ...GOOD, messages: [message("new", 0, T0)] }]],
  ["string as message id", [{ ...GOOD, messages: [{ ...message("new", 1, T0), id: "1" }] }]],
  ["message of another session", [{ ...GOOD, messages: [message("other", 1, T0)] }]],
  // A sparse array: holes are what a JavaScript caller may send.
  ["a hole in messages", [{ ...GOOD, messages: [GOOD.messages[0], , GOOD.messages[1]] }]],
  ["a good message, then a bad one", [{ ...GOOD, messages: [message("new", 1, T0), { content: "no role" }] }]],
  ["string as detachMissingParent", [GOOD, { detachMissingParent: "yes" }]],
];

export function importContract(open: Opener): void {
  describe("importSession", () => {
    test("an exportSession() result imported into a fresh file exports back identical, searchable, parents first", async (t) => {
      const source = (await fresh(t, open)).db;
      await source.createSession("p", "telegram", {
        model: "gpt-x", modelConfig: { temperature: 0.5 }, systemPrompt: "be brief", userId: "u1",
      });
      await source.createSession("c", "cli", { parentSessionId: "p" });
      await source.appendMessage("p", { role: "user", content: "parent says hello", tokenCount: 3 });
      await source.appendMessage("c", { role: "user", content: "zebra crossing" });
      await source.appendMessage("c", {
        role: "assistant", content: null, toolCalls: [{ id: "call_1" }, { id: "call_2" }], finishReason: "tool_calls",
        reasoning: "think", reasoningDetails: [{ step: 1 }], codexReasoningItems: [{ item: 1 }],
      });
      await source.appendMessage("c", { role: "tool", content: "42", toolCallId: "call_1", toolName: "calc" });
      await source.updateTokenCounts("p", {
        inputTokens: 10, outputTokens: 20, cacheReadTokens: null, estimatedCostUsd: 0.25, actualCostUsd: 0.5,
        costStatus: "final", costSource: "provider", pricingVersion: "v1", billingProvider: "openai",
        billingBaseUrl: "https://api.example", billingMode: "metered",
      }, { absolute: true });
      await source.setSessionTitle("p", "Parent title");
      await source.endSession("p", "compression");
      const parent = (await source.exportSession("p"))!;
      const child = (await source.exportSession("c"))!;
      assert.equal(parent.cache_read_tokens, null, "an explicit NULL counter travels too");

      const target = (await fresh(t, open)).db;
      assert.deepEqual(await target.importSession(parent), { ...IMPORTED, messages: 1 });
      assert.deepEqual(await target.importSession(child), { ...IMPORTED, messages: 3 });
      assert.deepEqual(await target.exportSession("p"), parent);
      assert.deepEqual(await target.exportSession("c"), child);
      assert.equal((await target.getSession("c"))?.tool_call_count, 2);
      assert.deepEqual((await target.searchMessages("zebra")).map((h) => h.session_id), ["c"]);
      assert.equal(await target.resolveSessionByTitle("Parent title"), "p");

      const next = await target.appendMessage("c", { role: "user", content: "after the import" });
      assert.ok(child.messages.every((m) => m.id < next), "a later message gets an id after the imported ones");
      assert.equal((await target.getSession("c"))?.message_count, 4);
    });

    test("an id already present is 'exists' and changes nothing", async (t) => {
      const { db } = await fresh(t, open);
      await db.createSession("s", "cli");
      await db.appendMessage("s", { role: "user", content: "original" });
      await db.setSessionTitle("s", "Kept");
      const before = (await db.exportSession("s"))!;
      const exists = { status: "exists", ...NOTHING_WRITTEN };
      assert.deepEqual(await db.importSession(before), exists);
      const altered = exported("s", [message("s", 500, T0)], { source: "telegram", model: "other", title: "Changed" });
      assert.deepEqual(await db.importSession(altered), exists);
      assert.deepEqual(await db.exportSession("s"), before);
      assert.equal(await db.messageCount(), 1);
      assert.equal(await db.getSessionByTitle("Changed"), null);
    });

    test("a missing parent is 'parent-missing' and writes nothing, unless detachMissingParent", async (t) => {
      const { db } = await fresh(t, open);
      const orphan = exported("orphan", [message("orphan", 1, T0), message("orphan", 2, T0 + 1)], { parent_session_id: "ghost" });
      const missing = { status: "parent-missing", ...NOTHING_WRITTEN };
      assert.deepEqual(await db.importSession(orphan), missing);
      assert.deepEqual(await db.importSession(orphan, { detachMissingParent: false }), missing);
      assert.equal(await db.sessionCount(), 0);
      assert.equal(await db.messageCount(), 0);

      assert.deepEqual(await db.importSession(orphan, { detachMissingParent: true }), {
        ...IMPORTED, messages: 2, parentDetached: true,
      });
      const row = await db.getSession("orphan");
      assert.equal(row?.parent_session_id, null);
      assert.equal(row?.message_count, 2);

      const child = exported("child", [], { parent_session_id: "orphan" });
      assert.deepEqual(await db.importSession(child, { detachMissingParent: true }), IMPORTED, "a present parent is kept");
      assert.equal((await db.getSession("child"))?.parent_session_id, "orphan");
    });

    test("one taken id renumbers every message in (timestamp, id) order; the counters are recomputed", async (t) => {
      const { db } = await fresh(t, open);
      await db.createSession("a", "cli");
      const held: number[] = [];
      for (const content of ["a1", "a2", "a3"]) held.push(await db.appendMessage("a", { role: "user", content }));
      const taken = held[2]!;
      const b = "b";
      // In no particular array order; two share a timestamp, so the id breaks the tie.
      const session = exported(b, [
        message(b, taken + 10, T0 + 2, { content: "fourth" }),
        message(b, taken, T0 + 2, { content: "third", tool_calls: { name: "one call" } }),
        message(b, taken + 40, T0 + 0.5, { content: "first", role: "assistant", tool_calls: [{ id: "x" }, { id: "y" }] }),
        message(b, taken + 20, T0 + 1, { content: "second" }),
      ], { message_count: 99, tool_call_count: 42 });

      assert.deepEqual(await db.importSession(session), { ...IMPORTED, messages: 4, renumbered: true });
      const messages = await db.getMessages(b);
      assert.deepEqual(messages.map((m) => m.content), ["first", "second", "third", "fourth"]);
      assert.deepEqual(messages.map((m) => m.timestamp), [T0 + 0.5, T0 + 1, T0 + 2, T0 + 2]);
      const ids = messages.map((m) => m.id);
      assert.ok(ids.every((id, i) => id > taken && (i === 0 || id > ids[i - 1]!)), `new ids ascend in order: ${ids.join(", ")}`);
      assert.deepEqual(messages[0]!.tool_calls, [{ id: "x" }, { id: "y" }]);
      const row = await db.getSession(b);
      assert.equal(row?.message_count, 4);
      assert.equal(row?.tool_call_count, 3);
      assert.deepEqual((await db.getMessages("a")).map((m) => [m.id, m.content]), [
        [held[0], "a1"], [held[1], "a2"], [held[2], "a3"],
      ]);
    });

    test("free ids are kept; ids repeated within a session, or absent, get new ones", async (t) => {
      const { db } = await fresh(t, open);
      const kept = exported("k", [message("k", 100, T0, { content: "early" }), message("k", 50, T0 + 1, { content: "late" })]);
      assert.deepEqual(await db.importSession(kept), { ...IMPORTED, messages: 2 });
      assert.deepEqual((await db.getMessages("k")).map((m) => [m.id, m.content]), [[100, "early"], [50, "late"]]);
      assert.ok((await db.appendMessage("k", { role: "user", content: "next" })) > 100);

      const repeated = exported("r", [message("r", 7, T0 + 1, { content: "second" }), message("r", 7, T0, { content: "first" })]);
      assert.deepEqual(await db.importSession(repeated), { ...IMPORTED, messages: 2, renumbered: true });
      assert.deepEqual((await db.getMessages("r")).map((m) => m.content), ["first", "second"]);

      const idless = exported("n", [without(message("n", 1, T0), "id") as MessageRow]);
      assert.deepEqual(await db.importSession(idless), { ...IMPORTED, messages: 1 });
      assert.equal((await db.getMessages("n")).length, 1);
      assert.equal(await db.messageCount(), 6);
    });

    test("a title another session holds fails with TITLE_IN_USE and writes nothing; titles are cleaned", async (t) => {
      const { db } = await fresh(t, open);
      await db.createSession("a", "cli");
      await db.setSessionTitle("a", "Shared");
      const clash = exported("b", [message("b", 1, T0)], { title: "  Shared\u200b " });
      await expectCode(() => db.importSession(clash), "TITLE_IN_USE");
      assert.equal(await db.getSession("b"), null);
      assert.equal(await db.messageCount(), 0);
      assert.equal(await db.sessionCount(), 1);

      await expectCode(() => db.importSession(exported("long", [], { title: "y".repeat(101) })), "TITLE_TOO_LONG");
      assert.deepEqual(await db.importSession(exported("c", [], { title: "\tFresh \n title\u202e " })), IMPORTED);
      assert.equal(await db.getSessionTitle("c"), "Fresh title");
      assert.equal(await db.getSessionByTitle("Fresh title").then((s) => s?.id), "c");
    });

    test("malformed sessions reject with INVALID_ARGUMENT and write nothing", async (t) => {
      const { db, path } = await fresh(t, open);
      await db.createSession("s", "cli");
      await db.appendMessage("s", { role: "user", content: "already here" });
      for (const [label, args] of MALFORMED) {
        await t.test(label, async () => {
          await expectCode(() => looseImport(db)(...args), "INVALID_ARGUMENT");
        });
      }
      assert.deepEqual(rawAll(path, "SELECT id FROM sessions"), [{ id: "s" }]);
      assert.deepEqual(rawAll(path, "SELECT content FROM messages"), [{ content: "already here" }]);
      assert.deepEqual(await db.importSession(GOOD), { ...IMPORTED, messages: 2 }, "the valid base imports");
    });
  });

  describe("sourceCounts", () => {
    test("sessions and message rows per source, the most sessions first, ties by name", async (t) => {
      const { db, path } = await fresh(t, open);
      assert.deepEqual(await db.sourceCounts(), []);
      await db.createSession("c1", "cli");
      await db.createSession("c2", "cli");
      await db.createSession("t1", "telegram");
      await db.createSession("x1", "api");
      for (const [id, content] of [["c1", "one"], ["c1", "two"], ["c2", "three"], ["t1", "four"]] as const) {
        await db.appendMessage(id, { role: "user", content });
      }
      setSession(path, "c1", { message_count: 99 }); // the counter is not what is counted
      assert.deepEqual(await db.sourceCounts(), [
        { source: "cli", sessions: 2, messages: 3 },
        { source: "api", sessions: 1, messages: 0 },
        { source: "telegram", sessions: 1, messages: 1 },
      ]);

      await db.importSession(exported("x2", [message("x2", 1000, T0), message("x2", 1001, T0)], { source: "api" }));
      await db.deleteSession("c2");
      await db.clearMessages("t1");
      assert.deepEqual(await db.sourceCounts(), [
        { source: "api", sessions: 2, messages: 2 },
        { source: "cli", sessions: 1, messages: 2 },
        { source: "telegram", sessions: 1, messages: 0 },
      ]);
    });
  });

  describe("sessionIdsByPrefix", () => {
    test("% and _ match themselves, ASCII letters any case, newest first, ties by id", async (t) => {
      const { db, path } = await fresh(t, open);
      const started: ReadonlyArray<readonly [string, number]> = [
        ["ab%1", 1], ["ab_2", 2], ["abX3", 3], ["ABc4", 4], ["abc5", 4], ["a\\b6", 5], ["Éa7", 6], ["zz", 7],
      ];
      rawWrite(path, (raw) => {
        const insert = raw.prepare("INSERT INTO sessions (id, source, started_at) VALUES (?, 'cli', ?)");
        for (const [id, offset] of started) insert.run(id, T0 + offset);
      });
      assert.deepEqual(await db.sessionIdsByPrefix("ab"), ["abc5", "ABc4", "abX3", "ab_2", "ab%1"]);
      assert.deepEqual(await db.sessionIdsByPrefix("AB"), await db.sessionIdsByPrefix("ab"));
      assert.deepEqual(await db.sessionIdsByPrefix("ab%"), ["ab%1"]);
      assert.deepEqual(await db.sessionIdsByPrefix("ab_"), ["ab_2"]);
      assert.deepEqual(await db.sessionIdsByPrefix("a\\"), ["a\\b6"]);
      assert.deepEqual(await db.sessionIdsByPrefix("éa"), [], "only ASCII letters fold");
      assert.deepEqual(await db.sessionIdsByPrefix("zz"), ["zz"], "a whole id is its own prefix");
      assert.deepEqual(await db.sessionIdsByPrefix("nothing"), []);
      assert.equal((await db.sessionIdsByPrefix("")).length, started.length);
    });

    test("at most limit ids (default 20, max 1000); a bad limit or prefix is INVALID_ARGUMENT", async (t) => {
      const { db, path } = await fresh(t, open);
      const ids = Array.from({ length: 25 }, (_, i) => `bulk-${String(i).padStart(2, "0")}`);
      rawWrite(path, (raw) => {
        const insert = raw.prepare("INSERT INTO sessions (id, source, started_at) VALUES (?, 'cli', ?)");
        ids.forEach((id, i) => insert.run(id, T0 + i));
      });
      const newestFirst = [...ids].reverse();
      assert.deepEqual(await db.sessionIdsByPrefix("bulk-"), newestFirst.slice(0, 20));
      assert.deepEqual(await db.sessionIdsByPrefix("bulk-", { limit: 3 }), newestFirst.slice(0, 3));
      assert.deepEqual(await db.sessionIdsByPrefix("bulk-", { limit: 1000 }), newestFirst);
      assert.deepEqual(await db.sessionIdsByPrefix("bulk-", { limit: 0 }), []);
      for (const args of [["bulk-", { limit: 1001 }], ["bulk-", { limit: -1 }], ["bulk-", { limit: "3" }], [5], []]) {
        await expectCode(() => looseIdsByPrefix(db)(...args), "INVALID_ARGUMENT");
      }
    });
  });
}

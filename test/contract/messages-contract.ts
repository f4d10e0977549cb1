/** Appending and loading messages (SPEC §3: appendMessage … clearMessages, messageCount). */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { rawAll, rawGet } from "../helpers/raw-db.js";
import { expectCode, fresh, MESSAGE_KEYS, nowSeconds, setMessage, sortedKeys, T0, type Opener } from "./fixture.js";

type StoredJson = { tool_calls: string | null; reasoning_details: string | null; codex_reasoning_items: string | null };

export function messagesContract(open: Opener): void {
  describe("appendMessage", () => {
    test("stores every field, stamped now, and returns increasing ids", async (t) => {
      const { db } = await fresh(t, open);
      await db.createSession("s", "cli");
      const before = nowSeconds();
      const first = await db.appendMessage("s", { role: "user", content: "hello" });
      const second = await db.appendMessage("s", {
        role: "assistant",
        content: "calling",
        toolCalls: [{ id: "c1", function: { name: "ls" } }],
        toolName: "ls",
        toolCallId: "c0",
        tokenCount: 42,
        finishReason: "tool_calls",
        reasoning: "thinking…",
        reasoningDetails: [{ type: "summary", text: "x" }],
        codexReasoningItems: [{ id: "r1" }],
      });
      assert.ok(Number.isInteger(first) && second > first);
      const messages = await db.getMessages("s");
      assert.equal(messages.length, 2);
      const m = messages[1]!;
      assert.deepEqual(sortedKeys(m), MESSAGE_KEYS);
      assert.equal(m.id, second);
      assert.equal(m.session_id, "s");
      assert.equal(m.role, "assistant");
      assert.equal(m.content, "calling");
      assert.deepEqual(m.tool_calls, [{ id: "c1", function: { name: "ls" } }], "tool_calls comes back decoded");
      assert.equal(m.tool_name, "ls");
      assert.equal(m.tool_call_id, "c0");
      assert.equal(m.token_count, 42);
      assert.equal(m.finish_reason, "tool_calls");
      assert.equal(m.reasoning, "thinking…");
      assert.equal(typeof m.reasoning_details, "string", "reasoning_details stays a string");
      assert.deepEqual(JSON.parse(m.reasoning_details!), [{ type: "summary", text: "x" }]);
      assert.deepEqual(JSON.parse(m.codex_reasoning_items!), [{ id: "r1" }]);
      assert.ok(m.timestamp >= before - 1 && m.timestamp <= nowSeconds() + 1);
      const plain = messages[0]!;
      assert.equal(plain.content, "hello");
      assert.equal(plain.tool_calls, null);
      assert.equal(plain.token_count, null);
    });

    test("bumps message_count; tool_call_count follows toolCalls, whatever the role", async (t) => {
      const { db } = await fresh(t, open);
      await db.createSession("s", "cli");
      const counts = async () => {
        const row = await db.getSession("s");
        return [row?.message_count, row?.tool_call_count];
      };
      await db.appendMessage("s", { role: "assistant", toolCalls: [{ id: 1 }, { id: 2 }, { id: 3 }] });
      assert.deepEqual(await counts(), [1, 3], "an array adds its length");
      await db.appendMessage("s", { role: "assistant", toolCalls: { id: "single" } });
      assert.deepEqual(await counts(), [2, 4], "a non-array value adds 1");
      await db.appendMessage("s", { role: "assistant", toolCalls: {} });
      assert.deepEqual(await counts(), [3, 5], "{} is non-null: adds 1 (and stores NULL)");
      await db.appendMessage("s", { role: "assistant", toolCalls: "raw" });
      assert.deepEqual(await counts(), [4, 6]);
      await db.appendMessage("s", { role: "tool", content: "result", toolCallId: "1" });
      assert.deepEqual(await counts(), [5, 6], "a tool result adds nothing");
      await db.appendMessage("s", { role: "assistant", toolCalls: null });
      await db.appendMessage("s", { role: "assistant", toolCalls: [] });
      assert.deepEqual(await counts(), [7, 6], "null and [] add nothing");
      await db.appendMessage("s", { role: "user", toolCalls: [{ id: 9 }, { id: 10 }] });
      assert.deepEqual(await counts(), [8, 8], "the role does not matter");
    });

    test("JSON fields [] and {} (and absent) store NULL; reasoning is stored as given", async (t) => {
      const { db, path } = await fresh(t, open);
      await db.createSession("s", "cli");
      const empty = await db.appendMessage("s", { role: "assistant", toolCalls: [], reasoningDetails: {}, codexReasoningItems: [] });
      const objects = await db.appendMessage("s", { role: "assistant", toolCalls: {}, reasoningDetails: [], codexReasoningItems: {} });
      const absent = await db.appendMessage("s", { role: "assistant", reasoning: "" });
      const kept = await db.appendMessage("s", { role: "assistant", reasoning: "  raw\nreasoning  ", codexReasoningItems: { a: 1 } });
      const stored = (id: number) =>
        rawGet<StoredJson & { reasoning: string | null }>(
          path, "SELECT tool_calls, reasoning_details, codex_reasoning_items, reasoning FROM messages WHERE id = ?", id,
        );
      for (const id of [empty, objects]) {
        assert.deepEqual(stored(id), { tool_calls: null, reasoning_details: null, codex_reasoning_items: null, reasoning: null });
      }
      assert.equal(stored(absent)?.reasoning, "");
      assert.equal(stored(kept)?.reasoning, "  raw\nreasoning  ");
      assert.deepEqual(JSON.parse(stored(kept)!.codex_reasoning_items!), { a: 1 });
    });

    test("appending to a missing session fails with CONSTRAINT and writes nothing", async (t) => {
      const { db, path } = await fresh(t, open);
      await db.createSession("s", "cli");
      await expectCode(() => db.appendMessage("ghost", { role: "user", content: "lost" }), "CONSTRAINT");
      await expectCode(() => db.appendMessage("", { role: "user", content: "lost" }), "CONSTRAINT");
      assert.deepEqual(rawAll(path, "SELECT id FROM messages"), []);
      assert.equal(await db.getSession("ghost"), null);
    });

    test("message ids are global and never reused, even after a delete", async (t) => {
      const { db } = await fresh(t, open);
      await db.createSession("a", "cli");
      await db.createSession("b", "cli");
      const a1 = await db.appendMessage("a", { role: "user", content: "1" });
      const b1 = await db.appendMessage("b", { role: "user", content: "2" });
      const a2 = await db.appendMessage("a", { role: "user", content: "3" });
      assert.ok(a1 < b1 && b1 < a2);
      await db.deleteSession("a");
      await db.deleteSession("b");
      await db.createSession("c", "cli");
      assert.ok((await db.appendMessage("c", { role: "user", content: "4" })) > a2);
    });
  });

  describe("getMessages", () => {
    test("orders by (timestamp, id), not by insertion", async (t) => {
      const { db, path } = await fresh(t, open);
      await db.createSession("s", "cli");
      await db.createSession("other", "cli");
      const ids: number[] = [];
      for (const content of ["m0", "m1", "m2", "m3"]) ids.push(await db.appendMessage("s", { role: "user", content }));
      await db.appendMessage("other", { role: "user", content: "elsewhere" });
      setMessage(path, ids[0]!, { timestamp: T0 + 30 });
      setMessage(path, ids[1]!, { timestamp: T0 + 10 });
      setMessage(path, ids[2]!, { timestamp: T0 + 20 });
      setMessage(path, ids[3]!, { timestamp: T0 + 10 });
      assert.deepEqual((await db.getMessages("s")).map((m) => m.content), ["m1", "m3", "m2", "m0"]);
      assert.deepEqual(await db.getMessages("ghost"), []);
    });

    test("undecodable tool_calls give []; reasoning fields stay strings as stored", async (t) => {
      const { db, path } = await fresh(t, open);
      await db.createSession("s", "cli");
      const id = await db.appendMessage("s", { role: "assistant", content: "x", toolCalls: [{ id: 1 }] });
      setMessage(path, id, { tool_calls: "{not json", reasoning_details: "[broken", codex_reasoning_items: "nope" });
      const [m] = await db.getMessages("s");
      assert.deepEqual(m?.tool_calls, []);
      assert.equal(m?.reasoning_details, "[broken");
      assert.equal(m?.codex_reasoning_items, "nope");
    });
  });

  describe("getMessagesAsConversation", () => {
    test("each entry is role and content plus only the truthy optional fields", async (t) => {
      const { db } = await fresh(t, open);
      await db.createSession("s", "cli");
      await db.appendMessage("s", { role: "system", content: "sys", tokenCount: 3, finishReason: "stop" });
      await db.appendMessage("s", { role: "user", content: "hi", toolName: "", toolCallId: "" });
      await db.appendMessage("s", {
        role: "assistant",
        content: null,
        toolCalls: [{ id: "c1" }],
        reasoning: "why",
        reasoningDetails: [{ k: 1 }],
        codexReasoningItems: { id: "r" },
        finishReason: "tool_calls",
      });
      await db.appendMessage("s", { role: "tool", content: "out", toolCallId: "c1", toolName: "ls" });
      await db.appendMessage("s", { role: "assistant", content: "done", reasoning: "", toolCalls: [] });
      assert.deepEqual(await db.getMessagesAsConversation("s"), [
        { role: "system", content: "sys" },
        { role: "user", content: "hi" },
        {
          role: "assistant",
          content: null,
          tool_calls: [{ id: "c1" }],
          reasoning: "why",
          reasoning_details: [{ k: 1 }],
          codex_reasoning_items: { id: "r" },
        },
        { role: "tool", content: "out", tool_call_id: "c1", tool_name: "ls" },
        { role: "assistant", content: "done" },
      ]);
      assert.deepEqual(await db.getMessagesAsConversation("ghost"), []);
    });

    test("reasoning fields appear only for assistant messages", async (t) => {
      const { db } = await fresh(t, open);
      await db.createSession("s", "cli");
      const reasoning = { reasoning: "r", reasoningDetails: [{ a: 1 }], codexReasoningItems: [{ b: 2 }] };
      await db.appendMessage("s", { role: "user", content: "u", ...reasoning });
      await db.appendMessage("s", { role: "tool", content: "t", ...reasoning });
      assert.deepEqual(await db.getMessagesAsConversation("s"), [
        { role: "user", content: "u" },
        { role: "tool", content: "t" },
      ]);
    });

    test("a damaged row never fails the load: bad tool_calls give [], bad reasoning JSON gives null", async (t) => {
      const { db, path } = await fresh(t, open);
      await db.createSession("s", "cli");
      await db.appendMessage("s", { role: "user", content: "before" });
      const id = await db.appendMessage("s", {
        role: "assistant", content: "x", toolCalls: [{ id: 1 }], reasoningDetails: [1], codexReasoningItems: [2],
      });
      setMessage(path, id, { tool_calls: "{oops", reasoning_details: "not json", codex_reasoning_items: "[1," });
      assert.deepEqual(await db.getMessagesAsConversation("s"), [
        { role: "user", content: "before" },
        { role: "assistant", content: "x", tool_calls: [], reasoning_details: null, codex_reasoning_items: null },
      ]);
    });

    test("same order as getMessages: (timestamp, id)", async (t) => {
      const { db, path } = await fresh(t, open);
      await db.createSession("s", "cli");
      const a = await db.appendMessage("s", { role: "user", content: "a" });
      await db.appendMessage("s", { role: "user", content: "b" });
      setMessage(path, a, { timestamp: nowSeconds() + 1000 });
      assert.deepEqual((await db.getMessagesAsConversation("s")).map((m) => m.content), ["b", "a"]);
    });
  });

  describe("clearMessages / messageCount", () => {
    test("clearMessages deletes the messages and resets the counters; tokens, costs and title stay", async (t) => {
      const { db } = await fresh(t, open);
      await db.createSession("s", "cli", { model: "m" });
      await db.createSession("keep", "cli");
      await db.appendMessage("s", { role: "user", content: "one" });
      await db.appendMessage("s", { role: "assistant", content: "two", toolCalls: [{ id: 1 }, { id: 2 }] });
      await db.appendMessage("keep", { role: "user", content: "kept" });
      await db.updateTokenCounts("s", { inputTokens: 10, outputTokens: 5, estimatedCostUsd: 0.5, actualCostUsd: 0.25 });
      await db.setSessionTitle("s", "Titled");
      await db.endSession("s", "done");
      const before = await db.getSession("s");
      await db.clearMessages("s");
      const after = await db.getSession("s");
      assert.deepEqual(await db.getMessages("s"), []);
      assert.deepEqual(after, { ...before!, message_count: 0, tool_call_count: 0 });
      assert.equal(await db.messageCount({ sessionId: "keep" }), 1, "other sessions keep their messages");
      await db.appendMessage("s", { role: "user", content: "fresh start", toolCalls: [{ id: 3 }] });
      const restarted = await db.getSession("s");
      assert.deepEqual([restarted?.message_count, restarted?.tool_call_count], [1, 1]);
      await db.clearMessages("ghost");
    });

    test("popMessage removes the newest message (by timestamp, then id) and returns it; the counters follow; null when none", async (t) => {
      const { db, path } = await fresh(t, open);
      await db.createSession("s", "cli");
      await db.createSession("other", "cli");
      const a = await db.appendMessage("s", { role: "user", content: "first" });
      await db.appendMessage("s", { role: "assistant", content: null, toolCalls: [{ id: "c1" }, { id: "c2" }] });
      await db.appendMessage("other", { role: "user", content: "elsewhere" });
      const [, call] = await db.getMessages("s");
      const popped = await db.popMessage("s");
      assert.deepEqual(popped, call, "the message as getMessages showed it");
      const session = await db.getSession("s");
      assert.deepEqual([session?.message_count, session?.tool_call_count], [1, 0]);
      // The order is getMessages': a message stamped later comes off first, whatever its id.
      const b = await db.appendMessage("s", { role: "user", content: "second" });
      setMessage(path, a, { timestamp: nowSeconds() + 1000 });
      assert.equal((await db.popMessage("s"))?.id, a);
      assert.equal((await db.popMessage("s"))?.id, b);
      assert.equal(await db.popMessage("s"), null);
      assert.equal(await db.popMessage("ghost"), null);
      assert.equal(await db.messageCount({ sessionId: "other" }), 1, "other sessions keep their messages");
    });

    test("messageCount counts all messages or one session's", async (t) => {
      const { db } = await fresh(t, open);
      assert.equal(await db.messageCount(), 0);
      await db.createSession("a", "cli");
      await db.createSession("b", "cli");
      for (let i = 0; i < 3; i++) await db.appendMessage("a", { role: "user", content: `a${i}` });
      await db.appendMessage("b", { role: "user", content: "b0" });
      assert.equal(await db.messageCount(), 4);
      assert.equal(await db.messageCount({ sessionId: "a" }), 3);
      assert.equal(await db.messageCount({ sessionId: "b" }), 1);
      assert.equal(await db.messageCount({ sessionId: "ghost" }), 0);
      assert.equal(await db.messageCount({}), 4);
    });
  });
}

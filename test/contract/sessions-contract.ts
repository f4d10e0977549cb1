/** Session lifecycle, lookup and counting (SPEC §3: createSession … resolveSessionId, searchSessions, sessionCount). */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { rawAll } from "../helpers/raw-db.js";
import { expectCode, fresh, nowSeconds, setSession, SESSION_KEYS, sortedKeys, T0, type Opener } from "./fixture.js";

export function sessionsContract(open: Opener): void {
  describe("createSession", () => {
    test("stores every given field, started now, counters at zero, and returns the id", async (t) => {
      const { db } = await fresh(t, open);
      const before = nowSeconds();
      const id = await db.createSession("s1", "cli", {
        model: "gpt-x",
        modelConfig: { temperature: 0.5, tools: ["a"] },
        systemPrompt: "be brief",
        userId: "u1",
      });
      const after = nowSeconds();
      assert.equal(id, "s1");
      const row = await db.getSession("s1");
      assert.ok(row);
      assert.deepEqual(sortedKeys(row), SESSION_KEYS);
      assert.equal(row.source, "cli");
      assert.equal(row.model, "gpt-x");
      assert.equal(typeof row.model_config, "string", "model_config stays a JSON string");
      assert.deepEqual(JSON.parse(row.model_config!), { temperature: 0.5, tools: ["a"] });
      assert.equal(row.system_prompt, "be brief");
      assert.equal(row.user_id, "u1");
      assert.equal(row.parent_session_id, null);
      assert.ok(row.started_at >= before - 1 && row.started_at <= after + 1, `started_at ${row.started_at} is now`);
      assert.equal(row.ended_at, null);
      assert.equal(row.end_reason, null);
      assert.equal(row.message_count, 0);
      assert.equal(row.tool_call_count, 0);
      for (const col of ["input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens"] as const) {
        assert.equal(row[col], 0, col);
      }
      assert.equal(row.estimated_cost_usd, null);
      assert.equal(row.actual_cost_usd, null);
      assert.equal(row.title, null);
    });

    test("a duplicate id is ignored: the first row wins entirely, the id is still returned", async (t) => {
      const { db } = await fresh(t, open);
      await db.createSession("p", "cli");
      await db.createSession("s", "cli", { model: "first", systemPrompt: "one", userId: "u1", modelConfig: { a: 1 } });
      const first = await db.getSession("s");
      const again = await db.createSession("s", "telegram", {
        model: "second", systemPrompt: "two", userId: "u2", modelConfig: { b: 2 }, parentSessionId: "p",
      });
      assert.equal(again, "s");
      assert.deepEqual(await db.getSession("s"), first);
      assert.equal(await db.sessionCount(), 2);
    });

    test("modelConfig {}, [] and null store NULL", async (t) => {
      const { db } = await fresh(t, open);
      await db.createSession("a", "cli", { modelConfig: {} });
      await db.createSession("b", "cli", { modelConfig: null });
      await db.createSession("c", "cli", { modelConfig: [] });
      await db.createSession("d", "cli", {});
      for (const id of ["a", "b", "c", "d"]) assert.equal((await db.getSession(id))?.model_config, null, id);
    });

    test("a known parent is stored; an unknown parent fails with CONSTRAINT and writes nothing", async (t) => {
      const { db } = await fresh(t, open);
      await db.createSession("parent", "cli");
      await db.createSession("child", "cli", { parentSessionId: "parent" });
      assert.equal((await db.getSession("child"))?.parent_session_id, "parent");
      await expectCode(() => db.createSession("orphan", "cli", { parentSessionId: "ghost" }), "CONSTRAINT");
      assert.equal(await db.getSession("orphan"), null);
      assert.equal(await db.sessionCount(), 2);
    });

    test("an empty, missing or null source fails with INVALID_ARGUMENT and writes nothing", async (t) => {
      const { db, path } = await fresh(t, open);
      const create = db.createSession.bind(db) as (...args: unknown[]) => Promise<string>;
      await expectCode(() => create("s", ""), "INVALID_ARGUMENT");
      await expectCode(() => create("s"), "INVALID_ARGUMENT");
      await expectCode(() => create("s", null), "INVALID_ARGUMENT");
      await expectCode(() => create("s", undefined, { model: "m" }), "INVALID_ARGUMENT");
      assert.deepEqual(rawAll(path, "SELECT id FROM sessions"), []);
    });
  });

  describe("ensureSession", () => {
    test("creates a missing session with source 'unknown' by default", async (t) => {
      const { db } = await fresh(t, open);
      await db.ensureSession("e1");
      await db.ensureSession("e2", "cron", "m2");
      const e1 = await db.getSession("e1");
      assert.equal(e1?.source, "unknown");
      assert.equal(e1?.model, null);
      const e2 = await db.getSession("e2");
      assert.equal(e2?.source, "cron");
      assert.equal(e2?.model, "m2");
    });

    test("never overwrites an existing session, and lets appends succeed", async (t) => {
      const { db } = await fresh(t, open);
      await db.createSession("s", "cli", { model: "orig", systemPrompt: "sp" });
      const before = await db.getSession("s");
      await db.ensureSession("s", "other", "new-model");
      assert.deepEqual(await db.getSession("s"), before);
      await db.ensureSession("late");
      await db.appendMessage("late", { role: "user", content: "after a failed create" });
      assert.equal((await db.getSession("late"))?.message_count, 1);
    });
  });

  describe("endSession / reopenSession / updateSystemPrompt", () => {
    test("the first end wins: a second endSession changes nothing", async (t) => {
      const { db, path } = await fresh(t, open);
      await db.createSession("s", "cli");
      await db.endSession("s", "user_exit");
      setSession(path, "s", { ended_at: T0 }); // a recognisable end time
      await db.endSession("s", "compression");
      const row = await db.getSession("s");
      assert.equal(row?.end_reason, "user_exit");
      assert.equal(row?.ended_at, T0);
    });

    test("ended_at is now", async (t) => {
      const { db } = await fresh(t, open);
      await db.createSession("s", "cli");
      const before = nowSeconds();
      await db.endSession("s", "done");
      const endedAt = (await db.getSession("s"))?.ended_at;
      assert.ok(typeof endedAt === "number" && endedAt >= before - 1 && endedAt <= nowSeconds() + 1);
    });

    test("reopen clears ended_at and end_reason; the session can then be ended again", async (t) => {
      const { db, path } = await fresh(t, open);
      await db.createSession("s", "cli");
      await db.endSession("s", "first");
      setSession(path, "s", { ended_at: T0 });
      await db.reopenSession("s");
      let row = await db.getSession("s");
      assert.equal(row?.ended_at, null);
      assert.equal(row?.end_reason, null);
      await db.endSession("s", "second");
      row = await db.getSession("s");
      assert.equal(row?.end_reason, "second");
      assert.ok(row?.ended_at !== null && row!.ended_at! > T0);
      await db.reopenSession("s");
      await db.reopenSession("s");
      assert.equal((await db.getSession("s"))?.end_reason, null);
    });

    test("updateSystemPrompt replaces the prompt", async (t) => {
      const { db } = await fresh(t, open);
      await db.createSession("s", "cli", { systemPrompt: "old" });
      await db.updateSystemPrompt("s", "new prompt");
      assert.equal((await db.getSession("s"))?.system_prompt, "new prompt");
    });

    test("on a missing id, end, reopen, updateSystemPrompt and updateTokenCounts do nothing and do not fail", async (t) => {
      const { db } = await fresh(t, open);
      await db.endSession("ghost", "done");
      await db.reopenSession("ghost");
      await db.updateSystemPrompt("ghost", "p");
      await db.updateTokenCounts("ghost", { inputTokens: 5, model: "m" });
      assert.equal(await db.sessionCount(), 0);
      assert.equal(await db.getSession("ghost"), null);
    });
  });

  describe("getSession / resolveSessionId", () => {
    test("getSession of a missing id is null", async (t) => {
      const { db } = await fresh(t, open);
      assert.equal(await db.getSession("nope"), null);
    });

    test("an exact id wins even when it is also a prefix of other ids", async (t) => {
      const { db } = await fresh(t, open);
      await db.createSession("abc", "cli");
      await db.createSession("abcdef", "cli");
      await db.createSession("abcxyz", "cli");
      assert.equal(await db.resolveSessionId("abc"), "abc");
    });

    test("a unique prefix resolves; an ambiguous or unknown one gives null", async (t) => {
      const { db } = await fresh(t, open);
      await db.createSession("abc", "cli");
      await db.createSession("abcdef", "cli");
      await db.createSession("zzz-1", "cli");
      assert.equal(await db.resolveSessionId("abcd"), "abcdef");
      assert.equal(await db.resolveSessionId("zz"), "zzz-1");
      assert.equal(await db.resolveSessionId("ab"), null, "two matches are ambiguous");
      assert.equal(await db.resolveSessionId("q"), null);
    });

    test("prefix matching is ASCII case-insensitive", async (t) => {
      const { db } = await fresh(t, open);
      await db.createSession("abcdef", "cli");
      assert.equal(await db.resolveSessionId("ABCD"), "abcdef");
    });

    test("% and _ and \\ in a prefix are literal, not wildcards", async (t) => {
      const { db } = await fresh(t, open);
      for (const id of ["a%1", "a_2", "ab3", "a\\4", "x_y_z"]) await db.createSession(id, "cli");
      assert.equal(await db.resolveSessionId("a%"), "a%1");
      assert.equal(await db.resolveSessionId("a_"), "a_2");
      assert.equal(await db.resolveSessionId("a\\"), "a\\4");
      assert.equal(await db.resolveSessionId("%"), null);
      assert.equal(await db.resolveSessionId("_"), null);
      assert.equal(await db.resolveSessionId("x_"), "x_y_z");
    });
  });

  describe("searchSessions / sessionCount", () => {
    test("searchSessions gives raw rows, children included, newest first, with source, limit and offset", async (t) => {
      const { db, path } = await fresh(t, open);
      await db.createSession("old", "cli");
      await db.createSession("mid", "telegram");
      await db.createSession("new", "cli", { parentSessionId: "old" });
      setSession(path, "old", { started_at: T0 });
      setSession(path, "mid", { started_at: T0 + 10 });
      setSession(path, "new", { started_at: T0 + 20 });
      const all = await db.searchSessions();
      assert.deepEqual(all.map((r) => r.id), ["new", "mid", "old"]);
      assert.deepEqual(sortedKeys(all[0]!), SESSION_KEYS, "raw session rows");
      assert.deepEqual((await db.searchSessions({ source: "cli" })).map((r) => r.id), ["new", "old"]);
      assert.deepEqual((await db.searchSessions({ limit: 1, offset: 1 })).map((r) => r.id), ["mid"]);
      assert.deepEqual((await db.searchSessions({ offset: 3 })).map((r) => r.id), []);
    });

    test("searchSessions returns 20 rows by default", async (t) => {
      const { db } = await fresh(t, open);
      for (let i = 0; i < 23; i++) await db.createSession(`s${i}`, "cli");
      assert.equal((await db.searchSessions()).length, 20);
      assert.equal((await db.searchSessions({ limit: 100 })).length, 23);
    });

    test("sessionCount counts all sessions or those of one source", async (t) => {
      const { db } = await fresh(t, open);
      assert.equal(await db.sessionCount(), 0);
      await db.createSession("a", "cli");
      await db.createSession("b", "cli", { parentSessionId: "a" });
      await db.createSession("c", "telegram");
      assert.equal(await db.sessionCount(), 3);
      assert.equal(await db.sessionCount({ source: "cli" }), 2);
      assert.equal(await db.sessionCount({ source: "telegram" }), 1);
      assert.equal(await db.sessionCount({ source: "none" }), 0);
    });
  });
}

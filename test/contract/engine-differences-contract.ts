/**
 * Where PostgreSQL cannot give FTS5's or SQLite's result, said explicitly: each test asserts what
 * both engines share, then what each engine does on its own (`db.engine`). docs/postgres.md lists the
 * same differences.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { expectCode, fresh, type Opener } from "./fixture.js";

export function engineDifferencesContract(open: Opener): void {
  describe("engine differences (SQLite FTS5 vs PostgreSQL tsvector)", () => {
    test("rank: the same hits; their order is FTS5's bm25 on SQLite and ts_rank on PostgreSQL", async (t) => {
      const { db } = await fresh(t, open);
      await db.createSession("s", "cli");
      const once = await db.appendMessage("s", { role: "user", content: `deploy ${"filler ".repeat(30)}` });
      const thrice = await db.appendMessage("s", { role: "user", content: "deploy deploy deploy" });
      const hits = (await db.searchMessages("deploy")).map((h) => h.id);
      assert.deepEqual([...hits].sort((a, b) => a - b), [once, thrice], "the same hits on both");
      // Both rank the message dense with the term first here; on other texts the orders can differ.
      assert.equal(hits[0], thrice);
    });

    test("snippets: markers on both; FTS5 cuts a 40-token window with '...', ts_headline a window of up to 40 words without", async (t) => {
      const { db } = await fresh(t, open);
      await db.createSession("s", "cli");
      await db.appendMessage("s", { role: "user", content: `${"lead ".repeat(60)}needle${" tail".repeat(60)}` });
      const [hit] = await db.searchMessages("needle");
      assert.ok(hit?.snippet.includes(">>>needle<<<"), hit?.snippet);
      const words = hit!.snippet.split(/\s+/).length;
      if (db.engine === "sqlite") assert.ok(hit!.snippet.startsWith("...") && hit!.snippet.endsWith("..."), hit!.snippet);
      else assert.ok(!hit!.snippet.includes("...") && words <= 41, hit!.snippet);
    });

    test("diacritics: FTS5's unicode61 folds them (cafe finds café); PostgreSQL's 'simple' configuration does not", async (t) => {
      const { db } = await fresh(t, open);
      await db.createSession("s", "cli");
      const id = await db.appendMessage("s", { role: "user", content: "un café noir" });
      assert.deepEqual((await db.searchMessages("café")).map((h) => h.id), [id], "the exact word on both");
      assert.deepEqual((await db.searchMessages("cafe")).map((h) => h.id), db.engine === "sqlite" ? [id] : []);
    });

    test("U+0000 in text: SQLite stores it; PostgreSQL text cannot hold it and refuses with INVALID_ARGUMENT", async (t) => {
      const { db } = await fresh(t, open);
      await db.createSession("s", "cli");
      if (db.engine === "sqlite") {
        await db.appendMessage("s", { role: "user", content: "a\0b" });
        assert.equal((await db.getMessages("s"))[0]?.content, "a\0b");
      } else {
        await expectCode(() => db.appendMessage("s", { role: "user", content: "a\0b" }), "INVALID_ARGUMENT");
        assert.equal(await db.messageCount(), 0, "nothing was written");
      }
    });

    test("token counts: no longer a difference — both engines refuse a fraction with INVALID_ARGUMENT", async (t) => {
      // SQLite kept 1.5 before the hardening made every token count an integer within ±(2^53 − 1).
      const { db } = await fresh(t, open);
      await db.createSession("s", "cli");
      await expectCode(() => db.updateTokenCounts("s", { inputTokens: 1.5 }), "INVALID_ARGUMENT");
      assert.equal((await db.getSession("s"))?.input_tokens, 0, "nothing was written");
    });
  });
}

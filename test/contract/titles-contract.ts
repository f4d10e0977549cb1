/** Titles: cleaning, uniqueness, lookup and numbered lineages (SPEC §3, "Titles"). */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { MAX_TITLE_LENGTH, sanitizeTitle, SessionDBError } from "../../src/index.js";
import { expectCode, fresh, setSession, SESSION_KEYS, sortedKeys, T0, type Opener } from "./fixture.js";

export function titlesContract(open: Opener): void {
  describe("sanitizeTitle", () => {
    test("the SPEC examples", () => {
      assert.equal(sanitizeTitle("  hello\x00  world  "), "hello world");
      assert.equal(sanitizeTitle("hello\u202eworld"), "helloworld");
      assert.equal(sanitizeTitle("\x00\u200b\ufeff"), null);
      assert.equal(sanitizeTitle(null), null);
      assert.equal(sanitizeTitle(""), null);
      assert.equal(sanitizeTitle("   "), null);
    });

    test("emoji, CJK, accents and # — ' are kept", () => {
      for (const title of ["🚀 launch 🎉", "数据库迁移", "日本語のタイトル", "한국어 제목", "Café naïve über", "# notes — it's done"]) {
        assert.equal(sanitizeTitle(title), title);
      }
    });

    test("control, zero-width and direction characters are deleted", () => {
      const deleted = [
        "\x01", "\x08", "\x0b", "\x0c", "\x0e", "\x1f", "\x7f", "\u200b", "\u200f", "\u2028", "\u202e",
        "\u2060", "\u2069", "\ufeff", "\ufff9", "\ufffc",
      ];
      for (const c of deleted) {
        assert.equal(sanitizeTitle(`ab${c}cd`), "abcd", `U+${c.codePointAt(0)!.toString(16).padStart(4, "0")}`);
      }
    });

    test("every whitespace run (tab, LF, CR, NBSP, ideographic space) collapses to one space", () => {
      assert.equal(sanitizeTitle("a\t\tb\nc\r\nd\u00a0\u00a0e\u3000f   g"), "a b c d e f g");
      assert.equal(sanitizeTitle("\n\t title \u3000"), "title");
    });

    test("100 code points after cleaning is fine; 101 fails with TITLE_TOO_LONG", () => {
      assert.equal(MAX_TITLE_LENGTH, 100);
      const hundred = "x".repeat(100);
      assert.equal(sanitizeTitle(hundred), hundred);
      assert.equal(sanitizeTitle(`  ${hundred}\u200b\u200b  `), hundred, "length counts after cleaning");
      const emoji = "😀".repeat(100);
      assert.equal(sanitizeTitle(emoji), emoji, "code points, not UTF-16 units");
      assert.throws(
        () => sanitizeTitle("y".repeat(101)),
        (err: unknown) =>
          err instanceof SessionDBError && err.code === "TITLE_TOO_LONG" && err.message === "Title too long (101 chars, max 100)",
      );
    });
  });

  describe("setSessionTitle / getSessionTitle / getSessionByTitle", () => {
    test("stores the cleaned title; re-setting its own title returns true", async (t) => {
      const { db } = await fresh(t, open);
      await db.createSession("s", "cli");
      assert.equal(await db.setSessionTitle("s", "  My\tproject\u200b "), true);
      assert.equal(await db.getSessionTitle("s"), "My project");
      assert.equal(await db.setSessionTitle("s", "My project"), true);
      assert.equal(await db.getSessionTitle("s"), "My project");
    });

    test("a missing session gives false and nothing is created", async (t) => {
      const { db } = await fresh(t, open);
      assert.equal(await db.setSessionTitle("ghost", "Title"), false);
      assert.equal(await db.sessionCount(), 0);
      assert.equal(await db.getSessionTitle("ghost"), null);
    });

    test("null, empty or all-invisible titles clear the title", async (t) => {
      const { db } = await fresh(t, open);
      await db.createSession("s", "cli");
      for (const clearing of [null, "", "\u200b\x00 "]) {
        await db.setSessionTitle("s", "Something");
        assert.equal(await db.setSessionTitle("s", clearing), true);
        assert.equal(await db.getSessionTitle("s"), null, JSON.stringify(clearing));
      }
      await db.createSession("t", "cli");
      await db.setSessionTitle("t", "Something");
      assert.equal(await db.getSessionTitle("t"), "Something", "a cleared title is free again");
    });

    test("exactly 100 characters is stored; 101 fails with TITLE_TOO_LONG and its exact message", async (t) => {
      const { db } = await fresh(t, open);
      await db.createSession("s", "cli");
      const hundred = "t".repeat(100);
      assert.equal(await db.setSessionTitle("s", hundred), true);
      assert.equal(await db.getSessionTitle("s"), hundred);
      await expectCode(() => db.setSessionTitle("s", "u".repeat(101)), "TITLE_TOO_LONG", "Title too long (101 chars, max 100)");
      await expectCode(() => db.setSessionTitle("ghost", "u".repeat(150)), "TITLE_TOO_LONG", "Title too long (150 chars, max 100)");
      assert.equal(await db.getSessionTitle("s"), hundred, "a failed set changes nothing");
    });

    test("only the cleaned length counts, however long the text sent", async (t) => {
      const { db } = await fresh(t, open);
      await db.createSession("s", "cli");
      await expectCode(() => db.setSessionTitle("s", "v".repeat(5000)), "TITLE_TOO_LONG", "Title too long (5000 chars, max 100)");
      assert.equal(await db.setSessionTitle("s", `${" ".repeat(5000)}short${"\u200b".repeat(5000)}`), true);
      assert.equal(await db.getSessionTitle("s"), "short");
    });

    test("a title another session has fails with TITLE_IN_USE and its exact message", async (t) => {
      const { db } = await fresh(t, open);
      await db.createSession("owner", "cli");
      await db.createSession("other", "cli");
      await db.setSessionTitle("owner", "Shared name");
      await expectCode(
        () => db.setSessionTitle("other", "Shared name"),
        "TITLE_IN_USE",
        "Title 'Shared name' is already in use by session owner",
      );
      await expectCode(
        () => db.setSessionTitle("other", "  Shared\u200b   name "),
        "TITLE_IN_USE",
        "Title 'Shared name' is already in use by session owner",
      );
      assert.equal(await db.getSessionTitle("other"), null);
      assert.equal(await db.setSessionTitle("other", "shared name"), true, "uniqueness is case-sensitive");
    });

    test("getSessionByTitle is an exact, case-sensitive match returning the full row", async (t) => {
      const { db } = await fresh(t, open);
      await db.createSession("s", "cli", { model: "m" });
      await db.setSessionTitle("s", "My Title");
      const row = await db.getSessionByTitle("My Title");
      assert.ok(row);
      assert.deepEqual(sortedKeys(row), SESSION_KEYS);
      assert.equal(row.id, "s");
      assert.equal(row.model, "m");
      assert.equal(await db.getSessionByTitle("my title"), null);
      assert.equal(await db.getSessionByTitle("My"), null);
      assert.equal(await db.getSessionByTitle("My Title #2"), null);
    });
  });

  describe("resolveSessionByTitle", () => {
    test("the newest numbered variant wins, even when the exact title exists", async (t) => {
      const { db, path } = await fresh(t, open);
      for (const id of ["base", "n2", "n3"]) await db.createSession(id, "cli");
      await db.setSessionTitle("base", "proj");
      await db.setSessionTitle("n2", "proj #2");
      await db.setSessionTitle("n3", "proj #3");
      setSession(path, "base", { started_at: T0 + 100 });
      setSession(path, "n3", { started_at: T0 + 10 });
      setSession(path, "n2", { started_at: T0 + 20 });
      assert.equal(await db.resolveSessionByTitle("proj"), "n2", "newest started_at among numbered");
      setSession(path, "n3", { started_at: T0 + 30 });
      assert.equal(await db.resolveSessionByTitle("proj"), "n3");
    });

    test("the exact title when no numbered variant exists; else null", async (t) => {
      const { db } = await fresh(t, open);
      await db.createSession("a", "cli");
      await db.createSession("b", "cli");
      await db.setSessionTitle("a", "alpha");
      await db.setSessionTitle("b", "alphabet #2");
      assert.equal(await db.resolveSessionByTitle("alpha"), "a", "'alphabet #2' is not a variant of 'alpha'");
      assert.equal(await db.resolveSessionByTitle("nothing"), null);
    });

    test("% and _ in a title are literal", async (t) => {
      const { db } = await fresh(t, open);
      for (const id of ["pct", "pctx", "und", "undx"]) await db.createSession(id, "cli");
      await db.setSessionTitle("pct", "100%");
      await db.setSessionTitle("pctx", "100 percent #2");
      await db.setSessionTitle("und", "a_b");
      await db.setSessionTitle("undx", "axb #2");
      assert.equal(await db.resolveSessionByTitle("100%"), "pct");
      assert.equal(await db.resolveSessionByTitle("a_b"), "und");
    });
  });

  describe("getNextTitleInLineage", () => {
    test("the four SPEC examples", async (t) => {
      const { db } = await fresh(t, open);
      assert.equal(await db.getNextTitleInLineage("my project"), "my project", "nothing exists");
      await db.createSession("s1", "cli");
      await db.setSessionTitle("s1", "my project");
      assert.equal(await db.getNextTitleInLineage("my project"), "my project #2", "the base exists");
      await db.createSession("s2", "cli");
      await db.setSessionTitle("s2", "my project #2");
      assert.equal(await db.getNextTitleInLineage("my project #2"), "my project #3", "called with a numbered title");
      await db.createSession("s3", "cli");
      await db.setSessionTitle("s3", "my project #3");
      assert.equal(await db.getNextTitleInLineage("my project"), "my project #4", "#2 and #3 exist");
      assert.equal(await db.getNextTitleInLineage("my project #3"), "my project #4");
      await db.setSessionTitle("s1", null);
      assert.equal(await db.getNextTitleInLineage("my project"), "my project #4", "the largest suffix counts without the base");
    });

    test("only numbered variants existing still count from the largest; % and _ are literal", async (t) => {
      const { db } = await fresh(t, open);
      await db.createSession("a", "cli");
      await db.setSessionTitle("a", "notes #7");
      assert.equal(await db.getNextTitleInLineage("notes"), "notes #8");
      await db.createSession("b", "cli");
      await db.setSessionTitle("b", "50x off #9");
      await db.createSession("c", "cli");
      await db.setSessionTitle("c", "50xoff #9");
      assert.equal(await db.getNextTitleInLineage("50% off"), "50% off");
      assert.equal(await db.getNextTitleInLineage("50_off"), "50_off");
    });
  });
}

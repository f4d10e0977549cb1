/** Full-text search: the sanitizer, FTS5, filters, context and the CJK fallback (SPEC §3.1). */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { isPostgresUrl } from "../../src/database-location.js";
import { containsCjk, MAX_NAME_LENGTH, sanitizeFtsQuery, type SearchHit, type SessionDB } from "../../src/index.js";
import { rawRun, rawWrite } from "../helpers/raw-db.js";
import { fresh, setMessage, setSession, T0, type Opener } from "./fixture.js";

const HIT_KEYS = ["id", "session_id", "role", "snippet", "timestamp", "tool_name", "source", "model", "session_started", "context"].sort();

/** Appends messages with pinned timestamps; returns their ids in order. */
async function seed(
  db: SessionDB,
  dbPath: string,
  sessionId: string,
  messages: Array<[role: string, content: string | null, at: number]>,
): Promise<number[]> {
  const ids: number[] = [];
  for (const [role, content, at] of messages) {
    const id = await db.appendMessage(sessionId, { role, content });
    setMessage(dbPath, id, { timestamp: at });
    ids.push(id);
  }
  return ids;
}

const ids = (hits: SearchHit[]) => hits.map((h) => h.id).sort((a, b) => a - b);

/** Queries that must never make a search fail. */
const HOSTILE_QUERIES = [
  '"', '""', '"""', "((", ")", "()", "AND", "OR", "NOT", "AND OR NOT", "NOT NOT", "hello AND", "OR",
  "*", "**", "* *", "*hello", "a*b*", "a:b", "col:", ":", "content:hello", "messages_fts:hello", "rank:1",
  "NEAR(", "NEAR(a b, 2)", "a NEAR b", "NEAR", "^", "^hello", "-", "--", "- -", "-hello", "hello -", "a - b",
  "+", "+hello", '"unterminated', 'unterminated"', '"a" "b', "{}", "{hello}", "[", "]", "\\", "'", "''", ".", "..",
  "a.b.", ".a", "\0", "\0hello", 'hello"\0"', "%", "_", "%_%", "🚀", "🚀*", '"🚀"', "\ud800", "\udc00hello",
  "a\ud83d", "ﬁ", "\u200b", "\u3000", "数据\"库", '"数据库', "数据 OR", "AND 数据", "x".repeat(MAX_NAME_LENGTH),
  "a ".repeat(MAX_NAME_LENGTH / 2), "(".repeat(MAX_NAME_LENGTH), "a-".repeat(MAX_NAME_LENGTH / 2 - 1) + "a",
  "hello OR ".repeat(400) + "world", '"' + "a b ".repeat(1000) + '"', "数".repeat(MAX_NAME_LENGTH),
];

export function searchContract(open: Opener): void {
  describe("sanitizeFtsQuery", () => {
    test("the SPEC examples", () => {
      const cases: Array<[string, string]> = [
        ["C++", "C"],
        ["hello AND", "hello"],
        ["OR world", "world"],
        ["***", ""],
        ['"a" "b', '"a"  b'],
        ['"one" two-three "four"', '"one" "two-three" "four"'],
        ["snake_case_name", "snake_case_name"],
        ["chat-send", '"chat-send"'],
        ["P2.2", '"P2.2"'],
        ["my-app.config.ts", '"my-app.config.ts"'],
      ];
      for (const [input, expected] of cases) assert.equal(sanitizeFtsQuery(input), expected, JSON.stringify(input));
    });

    test("stray operators and quotes become spaces; inner spaces are not collapsed", () => {
      assert.equal(sanitizeFtsQuery("{x} ^y +z"), "x   y  z");
      assert.equal(sanitizeFtsQuery("(a OR b)"), "a OR b");
      assert.equal(sanitizeFtsQuery('"unterminated'), "unterminated");
      assert.equal(sanitizeFtsQuery('say "hi there" ok'), 'say "hi there" ok');
    });

    test("stars: runs collapse, a leading star goes, a trailing star stays", () => {
      assert.equal(sanitizeFtsQuery("deploy*"), "deploy*");
      assert.equal(sanitizeFtsQuery("deploy***"), "deploy*");
      assert.equal(sanitizeFtsQuery("*deploy"), "deploy");
      assert.equal(sanitizeFtsQuery("a **b"), "a b");
    });

    test("one leading and one trailing AND/OR/NOT go, whole words only, any case", () => {
      assert.equal(sanitizeFtsQuery("NOT"), "");
      assert.equal(sanitizeFtsQuery("and hello"), "hello");
      assert.equal(sanitizeFtsQuery("hello or"), "hello");
      assert.equal(sanitizeFtsQuery("AND OR x"), "OR x");
      assert.equal(sanitizeFtsQuery("x AND OR"), "x AND");
      assert.equal(sanitizeFtsQuery("ANDROID phone"), "ANDROID phone");
      assert.equal(sanitizeFtsQuery("hello NOTE"), "hello NOTE");
      assert.equal(sanitizeFtsQuery("a AND b"), "a AND b");
    });

    test("dotted and hyphenated terms are quoted once, Unicode words included; phrases are untouched", () => {
      assert.equal(sanitizeFtsQuery('"chat-send" foo-bar'), '"chat-send" "foo-bar"');
      assert.equal(sanitizeFtsQuery("wörter-buch v1.2.3"), '"wörter-buch" "v1.2.3"');
      assert.equal(sanitizeFtsQuery("deploy-prod*"), '"deploy-prod"*');
      assert.equal(sanitizeFtsQuery("数据库"), "数据库");
    });
  });

  describe("containsCjk", () => {
    test("true for every range of SPEC §3.1, at both ends", () => {
      const inside = [
        0x4e00, 0x9fff, 0x3400, 0x4dbf, 0x20000, 0x2a6df, 0x3000, 0x303f, 0x3040, 0x309f, 0x30a0, 0x30ff, 0xac00, 0xd7af,
      ];
      for (const cp of inside) {
        assert.equal(containsCjk(`abc${String.fromCodePoint(cp)}def`), true, `U+${cp.toString(16)}`);
      }
      assert.equal(containsCjk("数据库"), true);
      assert.equal(containsCjk("ひらがな"), true);
      assert.equal(containsCjk("カタカナ"), true);
      assert.equal(containsCjk("한국어"), true);
    });

    test("false outside them", () => {
      const outside = [0x4dc0, 0x33ff, 0xa000, 0x2fff, 0xd7b0, 0xabff, 0x2a6e0, 0x1ffff, 0xff21, 0x1f680, 0xe9];
      for (const cp of outside) assert.equal(containsCjk(String.fromCodePoint(cp)), false, `U+${cp.toString(16)}`);
      assert.equal(containsCjk(""), false);
      assert.equal(containsCjk("plain ASCII text"), false);
    });
  });

  describe("searchMessages", () => {
    test("finds words; hits have exactly the SPEC keys, >>> <<< markers, and no content", async (t) => {
      const { db, path } = await fresh(t, open);
      await db.createSession("s", "cli", { model: "m1" });
      setSession(path, "s", { started_at: T0 });
      const [, hitId] = await seed(db, path, "s", [
        ["user", "what is the weather", T0 + 1],
        ["assistant", "the quick brown fox jumps", T0 + 2],
      ]);
      await db.appendMessage("s", { role: "tool", content: "fox tool output", toolName: "search_tool" });
      const hits = await db.searchMessages("quick");
      assert.equal(hits.length, 1);
      const hit = hits[0]!;
      assert.deepEqual(Object.keys(hit).sort(), HIT_KEYS);
      assert.equal(hit.id, hitId);
      assert.equal(hit.session_id, "s");
      assert.equal(hit.role, "assistant");
      assert.equal(hit.timestamp, T0 + 2);
      assert.equal(hit.source, "cli");
      assert.equal(hit.model, "m1");
      assert.equal(hit.session_started, T0);
      assert.equal(hit.tool_name, null);
      assert.ok(hit.snippet.includes(">>>quick<<<"), hit.snippet);
      const toolHit = (await db.searchMessages("output"))[0];
      assert.equal(toolHit?.tool_name, "search_tool");
      assert.deepEqual(await db.searchMessages("absent"), []);
    });

    test("blank and fully-sanitized-away queries return []", async (t) => {
      const { db } = await fresh(t, open);
      await db.createSession("s", "cli");
      await db.appendMessage("s", { role: "user", content: "AND OR NOT *** something" });
      for (const q of ["", "   ", "\n\t", "***", "AND", "()"]) assert.deepEqual(await db.searchMessages(q), [], JSON.stringify(q));
    });

    test("hyphenated and dotted terms, prefixes and phrases find what a person means", async (t) => {
      const { db } = await fresh(t, open);
      await db.createSession("s", "cli");
      const hyphen = await db.appendMessage("s", { role: "user", content: "run chat-send now" });
      const dotted = await db.appendMessage("s", { role: "user", content: "open my-app.config.ts please" });
      const prefix = await db.appendMessage("s", { role: "user", content: "the deployment failed" });
      const phrase = await db.appendMessage("s", { role: "user", content: "brown fox here" });
      await db.appendMessage("s", { role: "user", content: "fox brown there" });
      assert.deepEqual(ids(await db.searchMessages("chat-send")), [hyphen]);
      assert.deepEqual(ids(await db.searchMessages("my-app.config.ts")), [dotted]);
      assert.deepEqual(ids(await db.searchMessages("deploy*")), [prefix]);
      assert.deepEqual(ids(await db.searchMessages('"brown fox"')), [phrase]);
      assert.equal((await db.searchMessages("C++ deployment")).length, 0, "C and deployment are both required");
    });

    test("sourceFilter: [] matches nothing; absent searches every source; excludeSources [] filters nothing", async (t) => {
      const { db } = await fresh(t, open);
      await db.createSession("c", "cli");
      await db.createSession("g", "telegram");
      await db.createSession("d", "discord");
      const c = await db.appendMessage("c", { role: "user", content: "shared word" });
      const g = await db.appendMessage("g", { role: "user", content: "shared word" });
      const d = await db.appendMessage("d", { role: "user", content: "shared word" });
      assert.deepEqual(ids(await db.searchMessages("shared")), [c, g, d]);
      assert.deepEqual(await db.searchMessages("shared", { sourceFilter: [] }), []);
      assert.deepEqual(ids(await db.searchMessages("shared", { sourceFilter: ["cli", "discord"] })), [c, d]);
      assert.deepEqual(ids(await db.searchMessages("shared", { excludeSources: [] })), [c, g, d]);
      assert.deepEqual(ids(await db.searchMessages("shared", { excludeSources: ["cli"] })), [g, d]);
      assert.deepEqual(ids(await db.searchMessages("shared", { sourceFilter: ["cli", "telegram"], excludeSources: ["cli"] })), [g]);
      const hits = await db.searchMessages("shared", { sourceFilter: ["telegram"] });
      assert.deepEqual(hits.map((h) => h.source), ["telegram"]);
    });

    test("roleFilter keeps the listed roles; an empty roleFilter filters nothing", async (t) => {
      const { db } = await fresh(t, open);
      await db.createSession("s", "cli");
      const u = await db.appendMessage("s", { role: "user", content: "needle" });
      const a = await db.appendMessage("s", { role: "assistant", content: "needle" });
      const tool = await db.appendMessage("s", { role: "tool", content: "needle" });
      assert.deepEqual(ids(await db.searchMessages("needle", { roleFilter: ["assistant"] })), [a]);
      assert.deepEqual(ids(await db.searchMessages("needle", { roleFilter: ["user", "tool"] })), [u, tool]);
      assert.deepEqual(ids(await db.searchMessages("needle", { roleFilter: [] })), [u, a, tool]);
      assert.deepEqual(await db.searchMessages("needle", { roleFilter: ["system"] }), []);
    });

    test("limit and offset page the hits; the default limit is 20", async (t) => {
      const { db } = await fresh(t, open);
      await db.createSession("s", "cli");
      const all: number[] = [];
      for (let i = 0; i < 25; i++) all.push(await db.appendMessage("s", { role: "user", content: `page item ${i}` }));
      assert.equal((await db.searchMessages("page")).length, 20);
      const first = await db.searchMessages("page", { limit: 10 });
      const second = await db.searchMessages("page", { limit: 10, offset: 10 });
      const third = await db.searchMessages("page", { limit: 10, offset: 20 });
      assert.deepEqual([first.length, second.length, third.length], [10, 10, 5]);
      assert.deepEqual(ids([...first, ...second, ...third]), all, "pages are disjoint and cover every hit");
      assert.deepEqual(await db.searchMessages("page", { offset: 25 }), []);
      assert.deepEqual(await db.searchMessages("page", { limit: 0 }), []);
    });

    test("context is the previous, the hit and the next message of the same session by (timestamp, id)", async (t) => {
      const { db, path } = await fresh(t, open);
      await db.createSession("x", "cli");
      await db.createSession("y", "cli");
      const long = `marker3 ${"z".repeat(300)}`;
      await seed(db, path, "x", [
        ["user", "first xsession", T0 + 10],
        ["assistant", null, T0 + 30],
        ["user", "middle marker1", T0 + 50],
        ["assistant", long, T0 + 70],
        ["user", "closing marker4", T0 + 90],
      ]);
      await seed(db, path, "y", [
        ["user", "interleaved marker2", T0 + 40],
        ["assistant", "y reply", T0 + 60],
      ]);
      const [middle] = await db.searchMessages("marker1");
      assert.deepEqual(middle?.context, [
        { role: "assistant", content: "" },
        { role: "user", content: "middle marker1" },
        { role: "assistant", content: long.slice(0, 200) },
      ]);
      const [firstOfY] = await db.searchMessages("marker2");
      assert.deepEqual(firstOfY?.context, [
        { role: "user", content: "interleaved marker2" },
        { role: "assistant", content: "y reply" },
      ]);
      const [long_] = await db.searchMessages("marker3");
      assert.deepEqual(long_?.context, [
        { role: "user", content: "middle marker1" },
        { role: "assistant", content: long.slice(0, 200) },
        { role: "user", content: "closing marker4" },
      ]);
      const [last] = await db.searchMessages("marker4");
      assert.deepEqual(last?.context, [
        { role: "assistant", content: long.slice(0, 200) },
        { role: "user", content: "closing marker4" },
      ]);
    });

    test("context breaks timestamp ties by id", async (t) => {
      const { db, path } = await fresh(t, open);
      await db.createSession("s", "cli");
      await seed(db, path, "s", [
        ["user", "one", T0],
        ["user", "two", T0],
        ["user", "target three", T0],
        ["user", "four", T0],
      ]);
      const [hit] = await db.searchMessages("target");
      assert.deepEqual(hit?.context.map((m) => m.content), ["two", "target three", "four"]);
    });

    test("deleted and cleared messages are no longer found", async (t) => {
      const { db } = await fresh(t, open);
      await db.createSession("a", "cli");
      await db.createSession("b", "cli");
      await db.appendMessage("a", { role: "user", content: "ephemeral alpha" });
      await db.appendMessage("b", { role: "user", content: "ephemeral beta" });
      await db.clearMessages("a");
      assert.deepEqual((await db.searchMessages("ephemeral")).map((h) => h.session_id), ["b"]);
      await db.deleteSession("b");
      assert.deepEqual(await db.searchMessages("ephemeral"), []);
    });

    test("CJK substrings are found by the fallback: Chinese, Japanese kana, Korean hangul", async (t) => {
      const { db } = await fresh(t, open);
      await db.createSession("s", "cli");
      const zh = await db.appendMessage("s", { role: "user", content: "我们的数据库很快，真的" });
      const ja = await db.appendMessage("s", { role: "assistant", content: "これはデータベースです" });
      const ko = await db.appendMessage("s", { role: "user", content: "데이터베이스입니다" });
      await db.appendMessage("s", { role: "user", content: "nothing asian here" });
      const [zhHit] = await db.searchMessages("数据库");
      assert.equal(zhHit?.id, zh);
      assert.equal(zhHit?.snippet, "我们的数据库很快，真的", "the fallback snippet is the text around the match, no markers");
      assert.deepEqual(ids(await db.searchMessages('"数据库"')), [zh], "surrounding quotes are stripped");
      assert.deepEqual(ids(await db.searchMessages("データ")), [ja], "katakana");
      assert.deepEqual(ids(await db.searchMessages("これは")), [ja], "hiragana");
      assert.deepEqual(ids(await db.searchMessages("ひらがな")), []);
      assert.deepEqual(ids(await db.searchMessages("데이터")), [ko]);
      assert.deepEqual(ids(await db.searchMessages("数据库", { roleFilter: ["assistant"] })), []);
      assert.deepEqual(ids(await db.searchMessages("数据库", { sourceFilter: [] })), []);
      assert.deepEqual(ids(await db.searchMessages("数据库", { excludeSources: ["cli"] })), []);
      assert.equal(zhHit?.context.length, 2);
    });

    test("the CJK fallback is newest first with limit and offset, and snippets cut around the match", async (t) => {
      const { db, path } = await fresh(t, open);
      await db.createSession("s", "cli");
      const [older, newer, newest] = await seed(db, path, "s", [
        ["user", "旧的问题是数据库", T0 + 1],
        ["user", "新的问题是数据库", T0 + 2],
        ["user", `${"前".repeat(100)}数据库${"后".repeat(100)}`, T0 + 3],
      ]);
      assert.deepEqual((await db.searchMessages("数据库")).map((h) => h.id), [newest, newer, older]);
      assert.deepEqual((await db.searchMessages("数据库", { limit: 1, offset: 1 })).map((h) => h.id), [newer]);
      const [hit] = await db.searchMessages("数据库", { limit: 1 });
      assert.equal(hit?.snippet, `${"前".repeat(40)}数据库${"后".repeat(77)}`);
    });

    test("% and _ in a CJK query match literally", async (t) => {
      const { db } = await fresh(t, open);
      await db.createSession("s", "cli");
      const pct = await db.appendMessage("s", { role: "user", content: "进度100%完成了" });
      await db.appendMessage("s", { role: "user", content: "进度100x完成了" });
      const und = await db.appendMessage("s", { role: "user", content: "变量_名字" });
      await db.appendMessage("s", { role: "user", content: "变量x名字" });
      assert.deepEqual(ids(await db.searchMessages("100%完成")), [pct]);
      assert.deepEqual(ids(await db.searchMessages("量_名")), [und]);
      assert.deepEqual(ids(await db.searchMessages("%完")), [pct]);
    });

    test("the CJK fallback forgets cleared, deleted and pruned messages", async (t) => {
      const { db, path } = await fresh(t, open);
      for (const id of ["a", "b", "c", "d"]) {
        await db.createSession(id, "cli");
        await db.appendMessage(id, { role: "user", content: `会话${id}里的数据库迁移` });
        await db.endSession(id, "done");
      }
      const sessionsOf = async (query: string) => (await db.searchMessages(query)).map((h) => h.session_id).sort();
      assert.deepEqual(await sessionsOf("数据库迁移"), ["a", "b", "c", "d"]);
      await db.clearMessages("a");
      assert.deepEqual(await sessionsOf("数据库迁移"), ["b", "c", "d"]);
      await db.deleteSession("b");
      assert.deepEqual(await sessionsOf("数据库迁移"), ["c", "d"]);
      const longAgo = Date.now() / 1000 - 200 * 86_400;
      setSession(path, "c", { started_at: longAgo, ended_at: longAgo + 60 });
      assert.equal(await db.pruneSessions(), 1);
      assert.deepEqual(await sessionsOf("数据库迁移"), ["d"]);
      await db.deleteSession("d");
      assert.deepEqual(await sessionsOf("数据库迁移"), [], "the newest message deleted too");
      await db.createSession("e", "cli");
      await db.appendMessage("e", { role: "user", content: "新的数据库迁移" });
      assert.deepEqual(await sessionsOf("数据库迁移"), ["e"]);
    });

    test("the CJK fallback sees messages another process wrote or deleted, even at a reused id", async (t) => {
      const { db, path } = await fresh(t, open);
      if (isPostgresUrl(path)) {
        // PostgreSQL's pg_trgm index is part of the messages table, kept by the server on every
        // write: there is no index of ours to fall behind another writer (and no NULL id to insert).
        t.skip("the CJK index kept by catch-up is SQLite's");
        return;
      }
      await db.createSession("s", "cli");
      const sorted = (...list: number[]) => list.sort((x, y) => x - y);
      const own = await db.appendMessage("s", { role: "user", content: "自己写的数据库笔记" });
      assert.deepEqual(ids(await db.searchMessages("数据库笔记")), [own]);
      const insert = "INSERT INTO messages (id, session_id, role, content, timestamp) VALUES (?, 's', 'user', ?, ?)";
      const other = Number(rawWrite(path, (raw) => {
        const id = raw.prepare(insert).run(null, "别的进程写的数据库笔记", T0 + 5).lastInsertRowid;
        raw.prepare(insert).run(null, "无关的内容", T0 + 6);
        return id;
      }));
      assert.deepEqual(ids(await db.searchMessages("数据库笔记")), sorted(own, other));
      rawRun(path, "DELETE FROM messages WHERE id = ?", own);
      assert.deepEqual(ids(await db.searchMessages("数据库笔记")), [other]);
      const last = await db.appendMessage("s", { role: "user", content: "最后写的数据库笔记" });
      assert.deepEqual(ids(await db.searchMessages("数据库笔记")), sorted(other, last));
      // The newest message deleted and its id handed out again (as a table without AUTOINCREMENT,
      // or an explicit id, would): the new text is found, the old one is not.
      rawWrite(path, (raw) => {
        raw.prepare("DELETE FROM messages WHERE id = ?").run(last);
        raw.prepare(insert).run(last, "换了内容的同一个编号", T0 + 7);
      });
      assert.deepEqual(ids(await db.searchMessages("数据库笔记")), [other]);
      assert.deepEqual(ids(await db.searchMessages("同一个编号")), [last]);
      const later = await db.appendMessage("s", { role: "user", content: "之后写的同一个编号" });
      assert.deepEqual(ids(await db.searchMessages("同一个编号")), sorted(last, later));
      assert.deepEqual(ids(await db.searchMessages("数据库笔记")), [other]);
    });

    test("short CJK queries, LIKE metacharacters, quotes and ASCII case in the fallback", async (t) => {
      const { db } = await fresh(t, open);
      await db.createSession("s", "cli");
      const path = await db.appendMessage("s", { role: "user", content: "路径C:\\数据库\\文件夹" });
      const quoted = await db.appendMessage("s", { role: "user", content: '他说"你好"就走了' });
      const mixed = await db.appendMessage("s", { role: "user", content: "数据ABC库" });
      const pct = await db.appendMessage("s", { role: "user", content: "完成率百分之100%_了" });
      await db.appendMessage("s", { role: "user", content: "完成率百分之100x了" });
      assert.deepEqual(ids(await db.searchMessages("数据")), [path, mixed], "two characters: no trigram, still found");
      assert.deepEqual(ids(await db.searchMessages("库")), [path, mixed], "one character");
      assert.deepEqual(ids(await db.searchMessages("\\数据库\\")), [path], "backslashes match literally");
      assert.deepEqual(ids(await db.searchMessages("\\数据库\\文")), [path]);
      assert.deepEqual(ids(await db.searchMessages("\\\\数据库")), [], "a backslash is not an escape");
      assert.deepEqual(ids(await db.searchMessages('说"你好')), [quoted], "an inner quote is part of the text");
      assert.deepEqual(ids(await db.searchMessages("数据abc")), [mixed], "ASCII letters match in any case, as LIKE does");
      assert.deepEqual(ids(await db.searchMessages("之100%_")), [pct]);
      assert.deepEqual(ids(await db.searchMessages("之100%x")), []);
      assert.deepEqual(ids(await db.searchMessages("百分之100_")), [], "_ is not a wildcard");
    });

    test("hostile queries never fail", async (t) => {
      const { db } = await fresh(t, open);
      await db.createSession("s", "cli");
      await db.appendMessage("s", { role: "user", content: "hello world a b 数据库 🚀 content rank NEAR AND" });
      await db.appendMessage("s", { role: "assistant", content: 'quotes " and ( parens ) and * stars -' });
      for (const query of HOSTILE_QUERIES) {
        const hits = await db.searchMessages(query).catch((err: unknown) => {
          assert.fail(`searchMessages(${JSON.stringify(query.slice(0, 40))}) rejected: ${String(err)}`);
        });
        assert.ok(Array.isArray(hits), JSON.stringify(query.slice(0, 40)));
        for (const hit of hits) assert.deepEqual(Object.keys(hit).sort(), HIT_KEYS);
      }
    });
  });
}

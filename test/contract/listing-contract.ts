/** Compression chains and the rich listing (SPEC §3, "Compression chains", "listSessionsRich"). */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { RichSessionRow, SessionDB } from "../../src/index.js";
import { fresh, setMessage, setSession, SESSION_KEYS, sortedKeys, T0, type Opener } from "./fixture.js";

/** Creates a session with a controlled start (and optionally end) time. */
async function session(
  db: SessionDB,
  dbPath: string,
  id: string,
  times: { started: number; ended?: number; reason?: string; parent?: string; source?: string },
): Promise<void> {
  await db.createSession(id, times.source ?? "cli", times.parent === undefined ? {} : { parentSessionId: times.parent });
  setSession(dbPath, id, {
    started_at: times.started,
    ended_at: times.ended ?? null,
    end_reason: times.ended === undefined ? null : (times.reason ?? "compression"),
  });
}

/** Appends a message and pins its timestamp. */
async function message(db: SessionDB, dbPath: string, sessionId: string, role: string, content: string | null, at: number): Promise<number> {
  const id = await db.appendMessage(sessionId, { role, content });
  setMessage(dbPath, id, { timestamp: at });
  return id;
}

async function previewOf(db: SessionDB, id: string): Promise<string> {
  const row = (await db.listSessionsRich({ includeChildren: true, limit: 1000 })).find((r) => r.id === id);
  assert.ok(row, `session ${id} is listed`);
  return row.preview;
}

export function listingContract(open: Opener): void {
  describe("getCompressionTip", () => {
    test("an unknown id comes back unchanged; an uncompressed session is its own tip", async (t) => {
      const { db, path } = await fresh(t, open);
      assert.equal(await db.getCompressionTip("ghost"), "ghost");
      await session(db, path, "live", { started: T0 });
      await session(db, path, "done", { started: T0, ended: T0 + 5, reason: "user_exit" });
      await session(db, path, "done-child", { started: T0 + 6, parent: "done" });
      assert.equal(await db.getCompressionTip("live"), "live");
      assert.equal(await db.getCompressionTip("done"), "done", "only end_reason 'compression' is followed");
    });

    test("follows a chain to its end, taking the newest child started after the parent ended", async (t) => {
      const { db, path } = await fresh(t, open);
      await session(db, path, "A", { started: T0, ended: T0 + 100 });
      await session(db, path, "B-old", { started: T0 + 100, parent: "A" });
      await session(db, path, "B", { started: T0 + 110, ended: T0 + 200, parent: "A" });
      await session(db, path, "C", { started: T0 + 250, parent: "B" });
      assert.equal(await db.getCompressionTip("A"), "C");
      assert.equal(await db.getCompressionTip("B"), "C");
      assert.equal(await db.getCompressionTip("C"), "C");
    });

    test("a child started at exactly the parent's end counts; children started before it ended never do", async (t) => {
      const { db, path } = await fresh(t, open);
      await session(db, path, "A", { started: T0, ended: T0 + 100 });
      await session(db, path, "sub-agent", { started: T0 + 99, parent: "A" });
      assert.equal(await db.getCompressionTip("A"), "A", "a delegated sub-agent is never the tip");
      await session(db, path, "cont", { started: T0 + 100, parent: "A" });
      assert.equal(await db.getCompressionTip("A"), "cont");
    });

    test("a compressed session with no later child is its own tip", async (t) => {
      const { db, path } = await fresh(t, open);
      await session(db, path, "A", { started: T0, ended: T0 + 100 });
      assert.equal(await db.getCompressionTip("A"), "A");
    });
  });

  describe("listSessionsRich", () => {
    test("rows are full session rows plus last_active and preview, newest first", async (t) => {
      const { db, path } = await fresh(t, open);
      await session(db, path, "old", { started: T0 });
      await session(db, path, "new", { started: T0 + 50 });
      await message(db, path, "old", "user", "first question", T0 + 1);
      await message(db, path, "old", "assistant", "answer", T0 + 7);
      const rows = await db.listSessionsRich();
      assert.deepEqual(rows.map((r) => r.id), ["new", "old"]);
      const [fresh_, old] = rows as [RichSessionRow, RichSessionRow];
      assert.deepEqual(sortedKeys(old), [...SESSION_KEYS, "last_active", "preview"].sort());
      assert.equal(old.last_active, T0 + 7, "the newest message timestamp");
      assert.equal(old.preview, "first question");
      assert.equal(old.message_count, 2);
      assert.equal(fresh_.last_active, T0 + 50, "started_at when there are no messages");
      assert.equal(fresh_.preview, "");
    });

    test("children are excluded by default and included on request", async (t) => {
      const { db, path } = await fresh(t, open);
      await session(db, path, "root", { started: T0 });
      await session(db, path, "child", { started: T0 + 10, parent: "root" });
      await session(db, path, "grandchild", { started: T0 + 20, parent: "child" });
      assert.deepEqual((await db.listSessionsRich()).map((r) => r.id), ["root"]);
      assert.deepEqual((await db.listSessionsRich({ includeChildren: true })).map((r) => r.id), ["grandchild", "child", "root"]);
    });

    test("source, excludeSources, limit and offset filter and page", async (t) => {
      const { db, path } = await fresh(t, open);
      await session(db, path, "c1", { started: T0 + 1, source: "cli" });
      await session(db, path, "t1", { started: T0 + 2, source: "telegram" });
      await session(db, path, "c2", { started: T0 + 3, source: "cli" });
      await session(db, path, "d1", { started: T0 + 4, source: "discord" });
      const ids = async (opts: Parameters<SessionDB["listSessionsRich"]>[0]) => (await db.listSessionsRich(opts)).map((r) => r.id);
      assert.deepEqual(await ids({ source: "cli" }), ["c2", "c1"]);
      assert.deepEqual(await ids({ excludeSources: ["cli", "discord"] }), ["t1"]);
      assert.deepEqual(await ids({ excludeSources: [] }), ["d1", "c2", "t1", "c1"], "an empty exclusion filters nothing");
      assert.deepEqual(await ids({ limit: 2 }), ["d1", "c2"]);
      assert.deepEqual(await ids({ limit: 2, offset: 2 }), ["t1", "c1"]);
      assert.deepEqual(await ids({ offset: 4 }), []);
      assert.deepEqual(await ids({ source: "cli", excludeSources: ["cli"] }), []);
    });

    test("the default limit is 20", async (t) => {
      const { db } = await fresh(t, open);
      for (let i = 0; i < 22; i++) await db.createSession(`s${i}`, "cli");
      assert.equal((await db.listSessionsRich()).length, 20);
      assert.equal((await db.listSessionsRich({ limit: 50 })).length, 22);
    });

    test("a compressed root shows its chain's tip; identity, start and order stay the root's", async (t) => {
      const { db, path } = await fresh(t, open);
      await session(db, path, "R", { started: T0 });
      setSession(path, "R", { model: "root-model", system_prompt: "root prompt" });
      await db.setSessionTitle("R", "Root title");
      await db.updateTokenCounts("R", { inputTokens: 11 });
      await message(db, path, "R", "user", "root question", T0 + 1);
      await db.appendMessage("R", { role: "assistant", content: null, toolCalls: [{ id: 1 }, { id: 2 }] });
      setSession(path, "R", { ended_at: T0 + 100, end_reason: "compression" });
      await session(db, path, "M", { started: T0 + 100, ended: T0 + 200, parent: "R" });
      await db.setSessionTitle("M", "Middle");
      await session(db, path, "T", { started: T0 + 200, parent: "M" });
      await db.updateTokenCounts("T", { inputTokens: 99 });
      await message(db, path, "T", "user", "tip question", T0 + 210);
      await message(db, path, "T", "assistant", "tip answer", T0 + 300);
      await db.appendMessage("T", { role: "assistant", content: "calls", toolCalls: [{ id: 3 }] });
      const tLast = (await db.getMessages("T")).at(-1)!;
      setMessage(path, tLast.id, { timestamp: T0 + 301 });
      await session(db, path, "O", { started: T0 + 50 }); // between R's start and T's start

      const rows = await db.listSessionsRich();
      assert.deepEqual(rows.map((r) => r._lineage_root_id ?? r.id), ["O", "R"], "sorted by the root's started_at");
      const projected = rows[1]!;
      assert.equal(projected.id, "T");
      assert.equal(projected._lineage_root_id, "R");
      assert.equal(projected.ended_at, null);
      assert.equal(projected.end_reason, null);
      assert.equal(projected.message_count, 3);
      assert.equal(projected.tool_call_count, 1);
      assert.equal(projected.title, null, "the tip's title even when null");
      assert.equal(projected.model, null, "the tip's model even when null");
      assert.equal(projected.system_prompt, null, "the tip's system prompt even when null");
      assert.equal(projected.last_active, T0 + 301);
      assert.equal(projected.preview, "tip question");
      assert.equal(projected.started_at, T0, "started_at stays the root's");
      assert.equal(projected.parent_session_id, null);
      assert.equal(projected.input_tokens, 11, "columns outside the projected list stay the root's");
      assert.ok(!("_lineage_root_id" in rows[0]!), "an unprojected row has no _lineage_root_id");

      const paged = await db.listSessionsRich({ limit: 1, offset: 1 });
      assert.deepEqual(paged.map((r) => [r.id, r._lineage_root_id]), [["T", "R"]], "paging happens before projection");

      const plain = await db.listSessionsRich({ projectCompressionTips: false });
      assert.deepEqual(plain.map((r) => r.id), ["O", "R"]);
      assert.equal(plain[1]!.title, "Root title");
      assert.equal(plain[1]!.preview, "root question");
      assert.ok(!("_lineage_root_id" in plain[1]!));

      const withChildren = await db.listSessionsRich({ includeChildren: true });
      assert.deepEqual(withChildren.map((r) => r.id), ["T", "M", "O", "R"], "no projection when children are listed");
      assert.ok(withChildren.every((r) => !("_lineage_root_id" in r)));
    });

    test("the walk goes on from each session's own end: a tip's sub-agents, started after the root ended, are not followed", async (t) => {
      const { db, path } = await fresh(t, open);
      await session(db, path, "R", { started: T0, ended: T0 + 100 });
      await session(db, path, "M", { started: T0 + 100, ended: T0 + 300, reason: "user_exit", parent: "R" });
      await session(db, path, "S", { started: T0 + 150, parent: "M" }); // M's sub-agent, newer than R's end
      await message(db, path, "M", "user", "middle question", T0 + 101);
      const [row] = await db.listSessionsRich();
      assert.equal(row?.id, "M", "M ended otherwise than by compression: it is the tip");
      assert.equal(row?._lineage_root_id, "R");
      assert.equal(row?.end_reason, "user_exit");
      assert.equal(row?.preview, "middle question");
      assert.equal(await db.getCompressionTip("R"), "M");
    });

    test("a compressed root whose only child started before it ended is not projected", async (t) => {
      const { db, path } = await fresh(t, open);
      await session(db, path, "R", { started: T0, ended: T0 + 100 });
      await session(db, path, "sub", { started: T0 + 50, parent: "R" });
      const [row] = await db.listSessionsRich();
      assert.equal(row?.id, "R");
      assert.equal(row?.end_reason, "compression");
      assert.ok(!("_lineage_root_id" in row!));
    });
  });

  describe("preview", () => {
    test("from the first user message with content by (timestamp, id); none gives ''", async (t) => {
      const { db, path } = await fresh(t, open);
      await db.createSession("s", "cli");
      await message(db, path, "s", "assistant", "assistant first", T0);
      await message(db, path, "s", "user", "later user", T0 + 20);
      await message(db, path, "s", "user", null, T0 + 1);
      await message(db, path, "s", "user", "earliest user text", T0 + 10);
      assert.equal(await previewOf(db, "s"), "earliest user text", "by timestamp, not by id");
      await message(db, path, "s", "user", "same time, higher id", T0 + 10);
      assert.equal(await previewOf(db, "s"), "earliest user text", "equal timestamps: the lower id wins");
      await db.createSession("quiet", "cli");
      await message(db, path, "quiet", "assistant", "no user here", T0);
      await message(db, path, "quiet", "tool", "nor here", T0 + 1);
      assert.equal(await previewOf(db, "quiet"), "");
    });

    test("LF and CR become spaces, ends are trimmed, inner spaces stay", async (t) => {
      const { db } = await fresh(t, open);
      await db.createSession("s", "cli");
      await db.appendMessage("s", { role: "user", content: "  hello\nworld\r\nagain  " });
      assert.equal(await previewOf(db, "s"), "hello world  again");
    });

    test("63 characters are taken and trimmed; over 60 keeps 60 and appends '...'", async (t) => {
      const { db } = await fresh(t, open);
      const cases: Array<[string, string]> = [
        ["a".repeat(60), "a".repeat(60)],
        ["b".repeat(61), `${"b".repeat(60)}...`],
        ["c".repeat(200), `${"c".repeat(60)}...`],
        [`${"d".repeat(60)}   ${"e".repeat(10)}`, "d".repeat(60)],
        [`   ${"f".repeat(70)}`, "f".repeat(60)],
        [`${"g".repeat(62)}\nh`, `${"g".repeat(60)}...`],
        ["😀".repeat(70), `${"😀".repeat(60)}...`],
      ];
      for (const [i, [content, expected]] of cases.entries()) {
        await db.createSession(`p${i}`, "cli");
        await db.appendMessage(`p${i}`, { role: "user", content });
        assert.equal(await previewOf(db, `p${i}`), expected, `case ${i}`);
      }
    });
  });
}

/**
 * Oversized values, through a real daemon and in direct mode alike: a 10 MB message is stored and
 * read back whole, text up to the documented limit (15 MiB of UTF-8) is accepted and beyond it
 * refused with INVALID_ARGUMENT — also when the request would not fit in one frame — and ids,
 * titles, queries, filters and limits of absurd size get INVALID_ARGUMENT. The handle keeps
 * working after every refusal, and nothing refused is written.
 */
import assert from "node:assert/strict";
import { test, type TestContext } from "node:test";
import { MAX_FILTER_ENTRIES, MAX_LIMIT, MAX_NAME_LENGTH, MAX_TEXT_BYTES, openSessionDB, SessionDBError, type SessionDB } from "../../src/index.js";
import { freshDbPath } from "../helpers/daemon.js";
import { serve } from "./harness.js";

const TEN_MB = 10_000_000;
const HUGE = "x".repeat(1024 * 1024);

async function rejectsWith(call: Promise<unknown>, code: string, what: string): Promise<void> {
  await assert.rejects(
    call,
    (err: unknown) => {
      assert.ok(err instanceof SessionDBError, `${what}: ${String(err)}`);
      assert.equal(err.code, code, `${what}: ${err.code}: ${err.message}`);
      return true;
    },
    `${what} was accepted`,
  );
}

/** Every absurd argument, each refused; the handle must work after each one. */
async function absurdArguments(db: SessionDB): Promise<number> {
  const longId = "i".repeat(MAX_NAME_LENGTH + 1);
  const manySources = Array.from({ length: MAX_FILTER_ENTRIES + 1 }, (_, i) => `src-${i}`);
  const hugeList = Array.from({ length: 200_000 }, () => "cli");
  const cases: Array<[string, () => Promise<unknown>, string]> = [
    ["session id of 4097 chars", () => db.createSession(longId, "cli"), "INVALID_ARGUMENT"],
    ["session id of 1 MiB", () => db.appendMessage(HUGE, { role: "user", content: "x" }), "INVALID_ARGUMENT"],
    ["getSession of a 1 MiB id", () => db.getSession(HUGE), "INVALID_ARGUMENT"],
    ["source of 1 MiB", () => db.createSession("s-src", HUGE), "INVALID_ARGUMENT"],
    ["role of 1 MiB", () => db.appendMessage("big", { role: HUGE, content: "x" }), "INVALID_ARGUMENT"],
    // A title is cleaned before it is measured (SPEC §3), so past 100 characters it is TITLE_TOO_LONG, up to the text limit.
    ["title of 101 chars after cleaning", () => db.setSessionTitle("big", "t".repeat(101)), "TITLE_TOO_LONG"],
    ["title of 1 MiB", () => db.setSessionTitle("big", HUGE), "TITLE_TOO_LONG"],
    ["title of 1 MiB of zero-width spaces and text", () => db.setSessionTitle("big", `${"\u200b".repeat(1_000_000)}${"t".repeat(101)}`), "TITLE_TOO_LONG"],
    ["title of 20 MB", () => db.setSessionTitle("big", "t".repeat(20_000_000)), "INVALID_ARGUMENT"],
    ["getSessionByTitle of 1 MiB", () => db.getSessionByTitle(HUGE), "INVALID_ARGUMENT"],
    ["search query of 1 MiB", () => db.searchMessages(HUGE), "INVALID_ARGUMENT"],
    ["sourceFilter of 1001 entries", () => db.searchMessages("x", { sourceFilter: manySources }), "INVALID_ARGUMENT"],
    ["excludeSources of 200,000 entries", () => db.searchMessages("x", { excludeSources: hugeList }), "INVALID_ARGUMENT"],
    ["roleFilter entry of 1 MiB", () => db.searchMessages("x", { roleFilter: [HUGE] }), "INVALID_ARGUMENT"],
    ["listing excludeSources of 200,000", () => db.listSessionsRich({ excludeSources: hugeList }), "INVALID_ARGUMENT"],
    ["limit of 1e9", () => db.searchMessages("x", { limit: 1e9 }), "INVALID_ARGUMENT"],
    ["listing limit over the max", () => db.listSessionsRich({ limit: MAX_LIMIT + 1 }), "INVALID_ARGUMENT"],
    ["content over 15 MiB", () => db.appendMessage("big", { role: "user", content: "c".repeat(MAX_TEXT_BYTES + 1) }), "INVALID_ARGUMENT"],
    ["6M CJK characters (18 MB of UTF-8)", () => db.appendMessage("big", { role: "user", content: "\u4e2d".repeat(6_000_000) }), "INVALID_ARGUMENT"],
    ["content of 20 MB (over a frame)", () => db.appendMessage("big", { role: "user", content: "c".repeat(20_000_000) }), "INVALID_ARGUMENT"],
    ["system prompt of 20 MB", () => db.updateSystemPrompt("big", "p".repeat(20_000_000)), "INVALID_ARGUMENT"],
    ["tool calls of 20 MB", () => db.appendMessage("big", { role: "assistant", toolCalls: [{ arguments: "a".repeat(20_000_000) }] }), "INVALID_ARGUMENT"],
  ];
  if (db.mode === "daemon") {
    // Each field within its limit, but 20 MB in all: more than one frame may carry. Direct mode accepts it.
    const twoFields = () => db.appendMessage("big", { role: "assistant", content: "c".repeat(TEN_MB), reasoning: "r".repeat(TEN_MB) });
    cases.push(["two text fields of 10 MB each", twoFields, "INVALID_ARGUMENT"]);
  }
  for (const [what, call, code] of cases) {
    await rejectsWith(call(), code, what);
    assert.equal(await db.messageCount({ sessionId: "big" }), 2, `${what}: the handle stopped working or something was written`);
  }
  return cases.length;
}

async function oversizedScenario(t: TestContext, db: SessionDB): Promise<string> {
  await db.createSession("big", "cli");
  // 10 MB: accepted, read back whole, searchable.
  const content = `needle-start ${"m".repeat(TEN_MB - 40)} needle-end`;
  const id = await db.appendMessage("big", { role: "user", content });
  const [stored] = await db.getMessages("big");
  assert.equal(stored?.id, id);
  assert.equal(stored?.content, content);
  assert.equal((await db.searchMessages("needle")).length, 1);
  // Exactly at the documented limit (15 MiB of UTF-8): accepted.
  const atLimit = "l".repeat(MAX_TEXT_BYTES);
  await db.appendMessage("big", { role: "assistant", content: atLimit });
  assert.equal((await db.exportSession("big"))?.messages[1]?.content?.length, MAX_TEXT_BYTES);
  const refused = await absurdArguments(db);
  assert.equal((await db.getSession("big"))?.message_count, 2);
  t.diagnostic(`${db.mode}: 10 MB and 15 MiB messages stored and read back; ${refused} absurd arguments refused, the handle working after each`);
  return db.mode;
}

test("oversized values through the daemon", async (t) => {
  const daemon = await serve(t, freshDbPath(t), { readers: 2 });
  const db = await daemon.open(t);
  assert.equal(await oversizedScenario(t, db), "daemon");
  const stats = await (await daemon.open(t)).getSession("big");
  assert.equal(stats?.message_count, 2);
});

test("oversized values in direct mode", async (t) => {
  const db = await openSessionDB({ path: freshDbPath(t), mode: "direct" });
  t.after(() => db.close());
  assert.equal(await oversizedScenario(t, db), "direct");
});

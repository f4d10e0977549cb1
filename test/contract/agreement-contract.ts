/**
 * The two modes store the same thing for the same call (issue 12, items 5 and 16): text that is
 * not well-formed UTF-16, `__proto__` keys, objects with `toJSON`, BigInt, token counts, and the
 * size of one message.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { isPostgresUrl } from "../../src/database-location.js";
import type { SessionExport } from "../../src/index.js";
import { lastJsonLine, runToSuccess, sourceFixture, spawnPython } from "../helpers/processes.js";
import { rawAll, rawGet } from "../helpers/raw-db.js";
import { expectCode, fresh, T0, type Opener } from "./fixture.js";

const SMILE = "😀";
/** An emoji cut in half by slice: a lone high surrogate, and the lone low one. */
const HIGH = SMILE.slice(0, 1);
const LOW = SMILE.slice(1);
const CUT = `cut${HIGH}here${LOW}end`;
const MENDED = "cut\ufffdhere\ufffdend";

const SESSION_TEXT = ["id", "source", "user_id", "model", "model_config", "system_prompt", "title"];
const MESSAGE_TEXT = [
  "role", "content", "tool_call_id", "tool_calls", "tool_name", "finish_reason", "reasoning", "reasoning_details",
  "codex_reasoning_items",
];

/**
 * Every text column of every row, as the bytes SQLite holds, decoded strictly as UTF-8. A
 * PostgreSQL database in UTF8 holds nothing else (the server refuses invalid text): its texts
 * are read as they are.
 */
function assertAllUtf8(path: string): string[] {
  const decoder = new TextDecoder("utf-8", { fatal: true });
  const texts: string[] = [];
  for (const [table, columns] of [["sessions", SESSION_TEXT], ["messages", MESSAGE_TEXT]] as const) {
    for (const column of columns) {
      if (isPostgresUrl(path)) {
        for (const row of rawAll<{ text: string | null }>(path, `SELECT ${column}::text AS text FROM ${table}`)) if (row.text !== null) texts.push(row.text);
        continue;
      }
      for (const row of rawAll<{ b: Uint8Array | null }>(path, `SELECT CAST(${column} AS BLOB) AS b FROM ${table}`)) {
        if (row.b === null) continue;
        assert.doesNotThrow(() => texts.push(decoder.decode(row.b!)), `${table}.${column} holds UTF-8`);
      }
    }
  }
  return texts;
}

export function agreementContract(open: Opener): void {
  describe("the same stored text and the same errors in both modes", () => {
    test("lone surrogates are stored as U+FFFD in every text and JSON field, import included; the reference Python reads it all", async (t) => {
      const { db, path } = await fresh(t, open);
      await db.createSession(`s-${CUT}`, CUT, { model: CUT, systemPrompt: CUT, userId: CUT, modelConfig: { [CUT]: CUT } });
      await db.appendMessage(`s-${CUT}`, {
        role: CUT, content: `${CUT} needle`, toolName: CUT, toolCallId: CUT, toolCalls: [{ [CUT]: CUT }],
        finishReason: CUT, reasoning: CUT, reasoningDetails: { d: CUT }, codexReasoningItems: [CUT],
      });
      assert.equal(await db.setSessionTitle(`s-${CUT}`, `title ${CUT}`), true);
      const imported = {
        id: `imp-${CUT}`, source: CUT, started_at: T0, system_prompt: CUT, model_config: CUT, title: `other ${CUT}`,
        messages: [{ role: "user", content: `${CUT} needle`, timestamp: T0, tool_calls: [{ [CUT]: CUT }], reasoning_details: CUT }],
      } as unknown as SessionExport;
      await db.importSession(imported);

      const texts = assertAllUtf8(path);
      assert.ok(texts.some((s) => s.includes(MENDED)));
      assert.ok(!texts.some((s) => s.includes("\\ud83d") || s.includes("\\ude00")), "no escaped lone surrogate in JSON");
      const session = await db.getSession(`s-${MENDED}`);
      assert.equal(session?.model, MENDED);
      assert.equal(session?.system_prompt, MENDED);
      assert.equal(session?.title, `title ${MENDED}`);
      assert.deepEqual(JSON.parse(session?.model_config ?? "null"), { [MENDED]: MENDED });
      const [message] = await db.getMessages(`s-${MENDED}`);
      assert.equal(message?.content, `${MENDED} needle`);
      assert.equal(message?.role, MENDED);
      assert.deepEqual(message?.tool_calls, [{ [MENDED]: MENDED }]);
      assert.equal((await db.getMessages(`imp-${MENDED}`))[0]?.content, `${MENDED} needle`);
      assert.equal((await db.searchMessages("needle")).length, 2);

      // The reference Python reads a SQLite file.
      if (isPostgresUrl(path)) return;
      const python = lastJsonLine<{ sessions: number; messages: number; hits: number; contents: string[] }>(
        await runToSuccess(spawnPython(sourceFixture("read_text.py"), [path, "needle"])),
      );
      assert.deepEqual(python, { sessions: 2, messages: 2, hits: 2, contents: [`${MENDED} needle`, `${MENDED} needle`] });
    });

    test("a __proto__ key inside a JSON field is stored as __proto__ and read back as an own key", async (t) => {
      const { db, path } = await fresh(t, open);
      const withProto = () => JSON.parse('{"__proto__": {"polluted": true}, "name": "ls"}') as Record<string, unknown>;
      await db.createSession("s", "cli", { modelConfig: withProto() });
      await db.appendMessage("s", { role: "assistant", content: "c", toolCalls: [withProto()], reasoningDetails: withProto() });
      const stored = rawGet<{ tool_calls: string; reasoning_details: string }>(path, "SELECT tool_calls, reasoning_details FROM messages");
      // Spelled as the reference's json.dumps spells it.
      assert.equal(stored?.tool_calls, '[{"__proto__": {"polluted": true}, "name": "ls"}]');
      assert.equal(stored?.reasoning_details, '{"__proto__": {"polluted": true}, "name": "ls"}');
      assert.equal((await db.getSession("s"))?.model_config, '{"__proto__": {"polluted": true}, "name": "ls"}');
      const [conversation] = await db.getMessagesAsConversation("s");
      const call = (conversation?.tool_calls as Array<Record<string, unknown>>)[0]!;
      assert.ok(Object.hasOwn(call, "__proto__"), "an own key, as JSON.parse gives it");
      assert.equal(Object.getPrototypeOf(call), Object.prototype, "no prototype was changed");
      assert.equal(({} as Record<string, unknown>).polluted, undefined);
    });

    test("objects with toJSON are stored as JSON.stringify gives them (in json.dumps spelling); BigInt and a Map are refused", async (t) => {
      const { db, path } = await fresh(t, open);
      await db.createSession("s", "cli");
      class Money {
        constructor(readonly cents: number) {}
        toJSON() {
          return `${this.cents / 100} EUR`;
        }
      }
      const when = new Date(Date.UTC(2026, 0, 2, 3, 4, 5));
      const own = { secret: "not stored", toJSON: () => ({ shown: 1 }) };
      await db.appendMessage("s", { role: "tool", content: "c", toolCalls: [{ price: new Money(250), at: when, own }] });
      assert.equal(
        rawGet<{ tool_calls: string }>(path, "SELECT tool_calls FROM messages")?.tool_calls,
        '[{"price": "2.5 EUR", "at": "2026-01-02T03:04:05.000Z", "own": {"shown": 1}}]',
      );
      await expectCode(() => db.appendMessage("s", { role: "tool", toolCalls: [{ n: 10n }] }), "INVALID_ARGUMENT");
      await expectCode(() => db.appendMessage("s", { role: "tool", toolCalls: [new Map([["a", 1]])] }), "INVALID_ARGUMENT");
      await expectCode(() => db.createSession("t", "cli", { modelConfig: { big: 2n ** 70n } }), "INVALID_ARGUMENT");
      // toJSON counts only where JSON is written: a Date given as the content is refused, not stored as its string.
      await expectCode(() => db.appendMessage("s", { role: "user", content: when as unknown as string }), "INVALID_ARGUMENT");
      assert.equal(await db.messageCount({ sessionId: "s" }), 1, "nothing refused was stored");
    });

    test("token counts are integers within ±(2^53 - 1), else INVALID_ARGUMENT", async (t) => {
      const { db } = await fresh(t, open);
      await db.createSession("s", "cli");
      const max = Number.MAX_SAFE_INTEGER;
      await db.updateTokenCounts("s", { inputTokens: max, outputTokens: -max }, { absolute: true });
      const row = await db.getSession("s");
      assert.deepEqual([row?.input_tokens, row?.output_tokens], [max, -max]);
      for (const bad of [2 ** 53, -(2 ** 53), 1.5, 1e300]) {
        await expectCode(() => db.updateTokenCounts("s", { reasoningTokens: bad }), "INVALID_ARGUMENT");
        await expectCode(() => db.appendMessage("s", { role: "user", tokenCount: bad }), "INVALID_ARGUMENT");
      }
      await expectCode(() => db.updateTokenCounts("s", { inputTokens: 5n as unknown as number }), "INVALID_ARGUMENT");
      await expectCode(() => db.appendMessage("s", { role: "user", tokenCount: 5n as unknown as number }), "INVALID_ARGUMENT");
      const again = await db.getSession("s");
      assert.deepEqual([again?.input_tokens, again?.reasoning_tokens], [max, 0], "nothing refused was applied");
      assert.equal(await db.messageCount({ sessionId: "s" }), 0);
    });

    test("one message's text fields share one 15 MiB limit: 2 × 7 MiB is stored, 2 × 10 MiB is INVALID_ARGUMENT", async (t) => {
      const { db } = await fresh(t, open);
      await db.createSession("s", "cli");
      const mib = 1024 * 1024;
      const id = await db.appendMessage("s", { role: "user", content: "a".repeat(7 * mib), reasoning: "b".repeat(7 * mib) });
      const [stored] = await db.getMessages("s");
      assert.equal(stored?.id, id);
      assert.equal(stored?.content?.length, 7 * mib);
      const err = await expectCode(
        () => db.appendMessage("s", { role: "user", content: "a".repeat(10 * mib), reasoning: "b".repeat(10 * mib) }),
        "INVALID_ARGUMENT",
      );
      assert.match(err.message, /appendMessage is too large/);
      await expectCode(() => db.createSession("t", "cli", { systemPrompt: "p".repeat(10 * mib), modelConfig: { x: "q".repeat(10 * mib) } }), "INVALID_ARGUMENT");
      assert.equal(await db.messageCount({ sessionId: "s" }), 1);
    });
  });
}

/**
 * Idempotency keys (issue 25), on every transport: a write given a key is applied once, and the
 * same key again answers the first result (the same message id) without applying anything; the
 * same key with another op or other arguments is IDEMPOTENCY_CONFLICT and applies nothing; a
 * key that is not a string of 1–256 characters is INVALID_ARGUMENT; a write that failed leaves
 * its key unused. The keys are kept in the database's own `sessiondb_idempotency` table.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { rawAll, rawRun } from "../helpers/raw-db.js";
import { drain, expectCode, fresh, type Opener } from "./fixture.js";

const MSG = { role: "user", content: "once only" };

export function idempotencyContract(open: Opener): void {
  describe("idempotency keys", () => {
    test("the same key twice: appendMessage gives the same id and one row; createSession, endSession the first result", async (t) => {
      const { db } = await fresh(t, open);
      assert.equal(await db.createSession("s", "cli", { model: "m" }, { idempotencyKey: "create-s" }), "s");
      assert.equal(await db.createSession("s", "cli", { model: "m" }, { idempotencyKey: "create-s" }), "s");
      const first = await db.appendMessage("s", MSG, { idempotencyKey: "turn-1" });
      const again = await db.appendMessage("s", MSG, { idempotencyKey: "turn-1" });
      assert.equal(again, first, "the first message id, answered again");
      const other = await db.appendMessage("s", MSG, { idempotencyKey: "turn-2" });
      assert.notEqual(other, first, "another key is another write");
      assert.deepEqual((await db.getMessages("s")).map((m) => m.id), [first, other]);
      assert.equal((await db.getSession("s"))?.message_count, 2, "the counter went up once per key");
      const ended = await db.endSession("s", "done", { idempotencyKey: "end-s" });
      assert.equal(await db.endSession("s", "done", { idempotencyKey: "end-s" }), ended);
    });

    test("writes whose repeat would differ answer their first result: popMessage, deleteSession, importSession, setSessionTitle", async (t) => {
      const { db } = await fresh(t, open);
      await db.createSession("s", "cli");
      await db.appendMessage("s", { role: "user", content: "one" });
      await db.appendMessage("s", { role: "assistant", content: "two" });
      const popped = await db.popMessage("s", { idempotencyKey: "pop" });
      assert.equal(popped?.content, "two");
      assert.deepEqual(await db.popMessage("s", { idempotencyKey: "pop" }), popped, "the same row, and nothing more popped");
      assert.deepEqual((await db.getMessages("s")).map((m) => m.content), ["one"]);

      const exported = (await db.exportSession("s"))!;
      assert.equal(await db.deleteSession("s", { idempotencyKey: "delete" }), true);
      assert.equal(await db.deleteSession("s", { idempotencyKey: "delete" }), true, "the first answer, not false");
      const imported = await db.importSession(exported, undefined, { idempotencyKey: "import" });
      assert.deepEqual(await db.importSession(exported, undefined, { idempotencyKey: "import" }), imported, "not \"exists\"");
      assert.equal(await db.setSessionTitle("s", "T", { idempotencyKey: "title" }), true);
      assert.equal(await db.setSessionTitle("s", "T", { idempotencyKey: "title" }), true);
      assert.deepEqual(await drain(db.exportAll()), [{ ...exported, title: "T" }]);
    });

    test("a key used with other arguments or by another op: IDEMPOTENCY_CONFLICT, nothing applied", async (t) => {
      const { db } = await fresh(t, open);
      await db.createSession("s", "cli");
      const id = await db.appendMessage("s", MSG, { idempotencyKey: "k" });
      await expectCode(() => db.appendMessage("s", { ...MSG, content: "something else" }, { idempotencyKey: "k" }), "IDEMPOTENCY_CONFLICT");
      await expectCode(() => db.appendMessage("s", { ...MSG, role: "assistant" }, { idempotencyKey: "k" }), "IDEMPOTENCY_CONFLICT");
      await expectCode(() => db.endSession("s", "done", { idempotencyKey: "k" }), "IDEMPOTENCY_CONFLICT");
      await expectCode(() => db.setSessionTitle("s", "T", { idempotencyKey: "k" }), "IDEMPOTENCY_CONFLICT");
      const session = await db.getSession("s");
      assert.equal(session?.ended_at, null);
      assert.equal(session?.title, null);
      assert.deepEqual((await db.getMessages("s")).map((m) => [m.id, m.content]), [[id, "once only"]]);
      assert.equal(await db.appendMessage("s", MSG, { idempotencyKey: "k" }), id, "the first write's own repeat still answers");
    });

    test("a message given its timestamp keeps it and sorts where it was written; the same key with another timestamp is IDEMPOTENCY_CONFLICT", async (t) => {
      const { db } = await fresh(t, open);
      await db.createSession("s", "cli");
      const early = Date.now() / 1000 - 3600.25;
      await db.appendMessage("s", { role: "user", content: "now" });
      const replayed = await db.appendMessage("s", { role: "user", content: "an hour ago", timestamp: early }, { idempotencyKey: "spooled" });
      const rows = await db.getMessages("s");
      assert.deepEqual(rows.map((m) => m.content), ["an hour ago", "now"], "sorted by the time it was written, not applied");
      assert.equal(rows[0]!.timestamp, early, "the float kept as given");
      assert.deepEqual((await db.getMessagesAsConversation("s")).map((m) => m.content), ["an hour ago", "now"]);
      // A client's own resend carries the same timestamp: the first result again.
      assert.equal(await db.appendMessage("s", { role: "user", content: "an hour ago", timestamp: early }, { idempotencyKey: "spooled" }), replayed);
      await expectCode(
        () => db.appendMessage("s", { role: "user", content: "an hour ago", timestamp: early + 1 }, { idempotencyKey: "spooled" }),
        "IDEMPOTENCY_CONFLICT",
      );
      await expectCode(() => db.appendMessage("s", { role: "user", content: "an hour ago" }, { idempotencyKey: "spooled" }), "IDEMPOTENCY_CONFLICT");
      // A null timestamp is none: the write is stamped when applied, and its digest is a keyless-timestamp one.
      const plain = await db.appendMessage("s", { role: "user", content: "plain" }, { idempotencyKey: "plain" });
      assert.equal(await db.appendMessage("s", { role: "user", content: "plain", timestamp: null }, { idempotencyKey: "plain" }), plain);
      assert.equal(await db.messageCount({ sessionId: "s" }), 3);
    });

    test("a timestamp that is not a finite number above 0: INVALID_ARGUMENT, nothing applied", async (t) => {
      const { db } = await fresh(t, open);
      await db.createSession("s", "cli");
      for (const timestamp of [0, -1, Number.NaN, Number.POSITIVE_INFINITY, "1700000000", true, {}]) {
        await expectCode(() => db.appendMessage("s", { role: "user", content: "x", timestamp } as never, { idempotencyKey: "bad" }), "INVALID_ARGUMENT");
      }
      assert.equal(await db.messageCount(), 0);
      assert.ok(await db.appendMessage("s", { role: "user", content: "x", timestamp: 1 }, { idempotencyKey: "bad" }), "the key was left unused");
    });

    test("a key that is not a string of 1-256 characters, or write options that are not an object: INVALID_ARGUMENT, nothing applied", async (t) => {
      const { db } = await fresh(t, open);
      await db.createSession("s", "cli");
      for (const idempotencyKey of ["", "k".repeat(257), 42, ["k"]]) {
        await expectCode(() => db.appendMessage("s", MSG, { idempotencyKey } as never), "INVALID_ARGUMENT");
      }
      await expectCode(() => db.appendMessage("s", MSG, "k" as never), "INVALID_ARGUMENT");
      assert.equal(await db.messageCount(), 0);
      const longest = "k".repeat(256);
      const id = await db.appendMessage("s", MSG, { idempotencyKey: longest });
      assert.equal(await db.appendMessage("s", MSG, { idempotencyKey: longest }), id);
      assert.equal(await db.messageCount(), 1);
    });

    test("a write that failed leaves its key unused: the same key applies once the write can be", async (t) => {
      const { db } = await fresh(t, open);
      await expectCode(() => db.appendMessage("later", MSG, { idempotencyKey: "k" }), "CONSTRAINT");
      await db.createSession("later", "cli");
      const id = await db.appendMessage("later", MSG, { idempotencyKey: "k" });
      assert.equal(await db.appendMessage("later", MSG, { idempotencyKey: "k" }), id);
      assert.equal(await db.messageCount(), 1);
    });

    test("keys live in sessiondb_idempotency, one row per key, with the op and the first result", async (t) => {
      const { db, path } = await fresh(t, open);
      await db.createSession("s", "cli");
      const id = await db.appendMessage("s", MSG, { idempotencyKey: "stored" });
      await db.appendMessage("s", MSG, { idempotencyKey: "stored" });
      const rows = rawAll<{ op: string; result: string }>(path, "SELECT op, result FROM sessiondb_idempotency WHERE key = 'stored'");
      assert.deepEqual(rows, [{ op: "appendMessage", result: JSON.stringify([id]) }]);
      // A key past its retention and pruned is a new key: the write applies again.
      rawRun(path, "DELETE FROM sessiondb_idempotency WHERE key = 'stored'");
      assert.notEqual(await db.appendMessage("s", MSG, { idempotencyKey: "stored" }), id);
    });
  });
}

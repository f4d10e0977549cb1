/**
 * The request field `idempotencyKey` on the wire (docs/protocol.md §4): two requests with one key,
 * sent at once on two connections, are applied once and both answered the first result; the same
 * key with other arguments is IDEMPOTENCY_CONFLICT; a key that is not a string of 1–256
 * characters, or a key on a read, is INVALID_ARGUMENT under the request's id, the connection open.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { freshDbPath, startDaemon } from "../helpers/daemon.js";
import { rawAll, rawWrite } from "../helpers/raw-db.js";
import { RawConnection } from "../helpers/raw-connection.js";

const MSG = { role: "user", content: "sent twice" };

test("idempotencyKey: one key on two connections is one write and two same answers; conflicts and bad keys are refused, nothing applied", async (t) => {
  const dbPath = freshDbPath(t);
  const daemon = await startDaemon(t, dbPath);
  rawWrite(dbPath, (db) => db.prepare("INSERT INTO sessions (id, source, started_at) VALUES ('s', 'cli', 1)").run());
  const first = await RawConnection.open(t, daemon.socketPath);
  const second = await RawConnection.open(t, daemon.socketPath);

  first.send({ id: 1, op: "appendMessage", args: ["s", MSG], idempotencyKey: "wire-key" });
  second.send({ id: 2, op: "appendMessage", args: ["s", MSG], idempotencyKey: "wire-key" });
  const [a, b] = [await first.next(), await second.next()];
  assert.equal(a.ok, true, JSON.stringify(a));
  assert.deepEqual(b, { id: 2, ok: true, result: a.result });

  first.send(
    { id: 3, op: "appendMessage", args: ["s", { ...MSG, content: "other" }], idempotencyKey: "wire-key" },
    { id: 4, op: "appendMessage", args: ["s", MSG], idempotencyKey: 7 },
    { id: 5, op: "appendMessage", args: ["s", MSG], idempotencyKey: "" },
    { id: 6, op: "appendMessage", args: ["s", MSG], idempotencyKey: "k".repeat(257) },
    { id: 7, op: "getSession", args: ["s"], idempotencyKey: "read-key" },
  );
  const replies = new Map<number, { ok: unknown; error?: { code: string } }>();
  for (let i = 0; i < 5; i++) {
    const reply = await first.next();
    replies.set(reply.id, reply as never);
  }
  assert.equal(replies.get(3)?.error?.code, "IDEMPOTENCY_CONFLICT");
  for (const id of [4, 5, 6, 7]) assert.equal(replies.get(id)?.error?.code, "INVALID_ARGUMENT", `request ${id}: ${JSON.stringify(replies.get(id))}`);
  assert.equal(first.isClosed, false);
  assert.deepEqual(rawAll(dbPath, "SELECT id, content FROM messages"), [{ id: a.result, content: "sent twice" }]);
  assert.deepEqual(rawAll(dbPath, "SELECT key, op FROM sessiondb_idempotency"), [{ key: "wire-key", op: "appendMessage" }]);
});

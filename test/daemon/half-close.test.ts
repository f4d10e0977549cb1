/**
 * A client may half-close its side after its last request (SPEC §6): the daemon answers every
 * request it read, then closes. Raw bytes on a real socket to a real `serve` process.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { freshDbPath, startDaemon } from "../helpers/daemon.js";
import { rawAll } from "../helpers/raw-db.js";
import { RawConnection, type Reply } from "../helpers/raw-connection.js";

/** Every reply until the daemon closes the connection. */
async function repliesUntilClose(conn: RawConnection): Promise<Reply[]> {
  const replies: Reply[] = [];
  for (;;) {
    try {
      replies.push(await conn.next());
    } catch (err) {
      if (conn.isClosed) return replies;
      throw err;
    }
  }
}

test("a client that sends 7 requests then shuts down its write side receives all 7 replies, then the close", async (t) => {
  const dbPath = freshDbPath(t);
  const daemon = await startDaemon(t, dbPath);
  const setup = await RawConnection.open(t, daemon.socketPath);
  assert.equal((await setup.call(1, "createSession", ["half", "cli"])).ok, true);

  const conn = await RawConnection.open(t, daemon.socketPath);
  conn.send(
    { id: 1, op: "hello", args: [{ protocol: 1 }] },
    ...Array.from({ length: 4 }, (_, i) => ({ id: 2 + i, op: "appendMessage", args: ["half", { role: "user", content: `half-closed ${i}` }] })),
    { id: 6, op: "searchMessages", args: ["closed"] },
    { id: 7, op: "getSession", args: ["half"] },
  );
  conn.endWrites();
  const replies = await repliesUntilClose(conn);

  assert.deepEqual(replies.map((r) => r.id).sort((a, b) => a - b), [1, 2, 3, 4, 5, 6, 7]);
  for (const reply of replies) assert.equal(reply.ok, true, JSON.stringify(reply));
  assert.equal(rawAll(dbPath, "SELECT id FROM messages WHERE session_id = 'half'").length, 4);
});

test("a half-closed client whose requests wait behind backpressure still gets every reply", async (t) => {
  const dbPath = freshDbPath(t);
  const daemon = await startDaemon(t, dbPath);
  const setup = await RawConnection.open(t, daemon.socketPath);
  assert.equal((await setup.call(1, "createSession", ["many", "cli"])).ok, true);

  // More than the daemon's 256 requests in flight per connection: the rest wait, unread.
  const count = 600;
  const conn = await RawConnection.open(t, daemon.socketPath);
  conn.send(...Array.from({ length: count }, (_, i) => ({ id: i + 1, op: "appendMessage", args: ["many", { role: "user", content: `m ${i}` }] })));
  conn.endWrites();
  const replies = await repliesUntilClose(conn);

  assert.equal(replies.length, count);
  assert.equal(replies.filter((r) => r.ok === true).length, count);
  assert.equal(rawAll(dbPath, "SELECT id FROM messages WHERE session_id = 'many'").length, count);
});

/**
 * An idle daemon holds no reader thread (issue 29): its threads start on the first read and end
 * after `serve --reader-idle` without one, and the next read starts one again and is answered as
 * before. The threads are counted in /proc, beside the daemon's own `stats`.
 */
import assert from "node:assert/strict";
import { readdirSync } from "node:fs";
import { test } from "node:test";
import { daemonStats, freshDbPath, startDaemon } from "../helpers/daemon.js";
import { waitUntil } from "../helpers/wait-until.js";

function threadCount(pid: number): number {
  return readdirSync(`/proc/${pid}/task`).length;
}

test("a daemon with no client for its reader idle time has no reader thread left, and serves the next reads correctly", async (t) => {
  const dbPath = freshDbPath(t);
  const daemon = await startDaemon(t, dbPath, { readers: 2, args: ["--reader-idle", "0.2"] });
  // Before any read: no reader thread was started.
  const idleThreads = threadCount(daemon.pid);
  const first = await daemon.open(t);
  assert.equal((await daemonStats(first)).readers.live, 0, "a reader thread ran before the first read");
  await first.createSession("s", "cli");
  await first.appendMessage("s", { role: "user", content: "hello idle daemon" });
  assert.equal((await first.getSession("s"))?.message_count, 1);
  const reading = await daemonStats(first);
  assert.ok(reading.readers.live >= 1, "the read ran on no reader thread");
  assert.ok(threadCount(daemon.pid) > idleThreads, "the read started no thread");
  await first.close();

  // No client, no read: the pool shrinks to nothing.
  await waitUntil("the reader threads to end", () => threadCount(daemon.pid) <= idleThreads);
  const next = await daemon.open(t);
  assert.equal((await daemonStats(next)).readers.live, 0, "a reader thread is left");

  // The next reads start the threads again, and see everything.
  const hits = await next.searchMessages("idle");
  assert.deepEqual(hits.map((h) => h.session_id), ["s"]);
  assert.match(hits[0]?.snippet ?? "", /idle/);
  assert.equal((await next.getSession("s"))?.message_count, 1);
  assert.equal(await next.sessionCount(), 1);
  const again = await daemonStats(next);
  assert.ok(again.readers.live >= 1);
  assert.equal(again.readers.completed, reading.readers.completed + 3);
});

test("serve --reader-idle rejects a value that is not a positive number of seconds", async (t) => {
  await assert.rejects(() => startDaemon(t, freshDbPath(t), { args: ["--reader-idle", "0"] }), /--reader-idle.*positive number of seconds/);
});

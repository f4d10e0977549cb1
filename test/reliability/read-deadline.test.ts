/**
 * Reads have a deadline and can be abandoned (SPEC §5, §6): slow searches cannot starve point
 * reads (they have a reader thread of their own), a search past its deadline is stopped and
 * answered TIMEOUT with its thread freed, and the reads of clients that went away are dropped
 * instead of run — so a good client is not left waiting behind thousands of them.
 */
import assert from "node:assert/strict";
import { connect, type Socket } from "node:net";
import { test, type TestContext } from "node:test";
import { SessionDBError } from "../../src/index.js";
import { encodeFrame } from "../../src/protocol/frame-codec.js";
import { daemonStats, freshDbPath } from "../helpers/daemon.js";
import { buildSlowSearchFile, SLOW_QUERY, SLOW_SEARCH_MESSAGES } from "../helpers/slow-search.js";
import { waitUntil } from "../helpers/wait-until.js";
import { serve } from "./harness.js";

function rawSocket(t: TestContext, path: string): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(path);
    socket.on("error", () => undefined);
    t.after(() => socket.destroy());
    socket.once("connect", () => resolve(socket)).once("error", reject);
  });
}

test("slow searches cannot starve point reads; a search past its deadline is stopped with TIMEOUT and its reader freed", async (t) => {
  const dbPath = freshDbPath(t);
  buildSlowSearchFile(dbPath);
  const daemon = await serve(t, dbPath, { readers: 2 });
  const searcher = await daemon.open(t, { requestTimeoutMs: 120_000 });
  const reader = await daemon.open(t);
  const hurried = await daemon.open(t, { requestTimeoutMs: 300 });

  const finished: string[] = [];
  const searches = Array.from({ length: 4 }, (_, i) =>
    searcher.searchMessages(SLOW_QUERY, { limit: 20 }).then((hits) => {
      finished.push(`search ${i}`);
      return hits;
    }),
  );
  // Once the searches hold the readers, a point read comes in.
  await waitUntil("the searches holding the readers", async () => (await daemonStats(reader)).readers.inFlight >= 2);
  const session = await reader.getSession("big");
  finished.push("getSession");
  assert.equal(session?.message_count, SLOW_SEARCH_MESSAGES);
  assert.equal(finished[0], "getSession", `the point read waited for the searches: ${finished.join(", ")}`);
  for (const hits of await Promise.all(searches)) assert.equal(hits.length, 20);

  // A search past its deadline: stopped by the daemon, answered TIMEOUT, its thread free again.
  const late = await hurried.searchMessages(SLOW_QUERY, { limit: 20 }).then(
    () => null,
    (err: unknown) => err,
  );
  assert.ok(late instanceof SessionDBError, "a 300 ms deadline on a slow search did not fail");
  assert.equal(late.code, "TIMEOUT");
  assert.match(late.message, /stopped/, "the TIMEOUT did not come from the daemon stopping the search");
  // Answered at its deadline; its thread is stopped no sooner than 1 s into the read, then freed.
  await waitUntil("the stopped search's reader freed", async () => (await daemonStats(reader)).readers.inFlight === 0);
  assert.equal((await reader.searchMessages("aa*", { limit: 1 })).length, 1);
  t.diagnostic(`order: ${finished.join(", ")}; late search: ${late.message}`);
});

test("the reads of clients that went away are dropped, not run: a good client is answered at once after 2,000 were abandoned", async (t) => {
  const dbPath = freshDbPath(t);
  buildSlowSearchFile(dbPath);
  const daemon = await serve(t, dbPath, { readers: 2 });
  const db = await daemon.open(t);
  const before = (await daemonStats(db)).readers.completed;

  const abandoned = 100 * 20;
  const sockets = await Promise.all(Array.from({ length: 100 }, () => rawSocket(t, daemon.socketPath)));
  for (const socket of sockets) {
    socket.write(Buffer.concat(Array.from({ length: 20 }, (_, k) => encodeFrame({ id: k + 1, op: "searchMessages", args: [SLOW_QUERY, { limit: 5 }] }))));
  }
  await waitUntil("the abandoned searches queued", async () => (await daemonStats(db)).queueDepth >= abandoned / 2);
  for (const socket of sockets) socket.destroy();

  // A search of its own: queued behind the abandoned ones, it runs once they are dropped.
  assert.equal((await db.searchMessages("aa*", { limit: 1 })).length, 1);
  const ran = (await daemonStats(db)).readers.completed - before;
  assert.ok(ran < abandoned / 4, `${ran} of ${abandoned} abandoned searches were run anyway`);
  t.diagnostic(`${abandoned} searches abandoned; ${ran} reads run in all before the good client's search was answered`);
});

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
import { rawWrite } from "../helpers/raw-db.js";
import { buildSpecFile } from "../helpers/sqlite-files.js";
import { waitUntil } from "../helpers/wait-until.js";
import { serve } from "./harness.js";

const MESSAGES = 40_000;

/** A file with one session of `MESSAGES` messages of pseudo-random three-letter words (built in a few seconds). */
function buildFixture(path: string): void {
  buildSpecFile(path);
  rawWrite(path, (db) => {
    db.prepare("INSERT INTO sessions (id, source, started_at) VALUES ('big', 'cli', 1)").run();
    const insert = db.prepare("INSERT INTO messages (session_id, role, content, timestamp) VALUES ('big', 'user', ?, ?)");
    let x = 1;
    const word = () => {
      x = (x * 1103515245 + 12345) % 2147483648;
      return (x % 46656).toString(36).padStart(3, "a");
    };
    for (let i = 0; i < MESSAGES; i++) insert.run(Array.from({ length: 12 }, word).join(" "), 1 + i / 1000);
    db.prepare(`UPDATE sessions SET message_count = ${MESSAGES} WHERE id = 'big'`).run();
  });
}

/** A 4 KB query of OR-ed prefixes: it matches nearly every message, so it is slow. */
const SLOW_QUERY = (() => {
  const terms: string[] = [];
  for (let i = 0; terms.join(" OR ").length < 4000; i++) terms.push(`${(i % 1296).toString(36).padStart(2, "a")}*`);
  return terms.join(" OR ");
})();

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
  buildFixture(dbPath);
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
  assert.equal(session?.message_count, MESSAGES);
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
  assert.equal((await daemonStats(reader)).readers.inFlight, 0, "the stopped search still holds its reader");
  assert.equal((await reader.searchMessages("aa*", { limit: 1 })).length, 1);
  t.diagnostic(`order: ${finished.join(", ")}; late search: ${late.message}`);
});

test("the reads of clients that went away are dropped, not run: a good client is answered at once after 2,000 were abandoned", async (t) => {
  const dbPath = freshDbPath(t);
  buildFixture(dbPath);
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

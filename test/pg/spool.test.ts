/**
 * The durable spool on PostgreSQL (issue 25 item 3, docs/spool.md): writes made while the server
 * is down are spooled (SPOOLED) once their deadline passes, and applied once, in order, when it
 * is back: by the handle's next write in direct mode, by the daemon on its own in daemon mode.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import { openSessionDB, SpooledError, type SessionDB } from "../../src/index.js";
import { databaseIdentity, locateDatabase } from "../../src/engine-kind.js";
import { SpoolFile } from "../../src/spool/spool-file.js";
import { shortTempDir, startDaemon } from "../helpers/daemon.js";
import { usePgServer } from "../helpers/postgres.js";
import { waitUntil } from "../helpers/wait-until.js";

const server = usePgServer();

async function spooledWhileDown(db: SessionDB, contents: readonly string[]): Promise<void> {
  server().pause();
  try {
    for (const content of contents) {
      const err = await db.appendMessage("s", { role: "user", content }).catch((e: unknown) => e);
      assert.ok(err instanceof SpooledError, String(err));
      // Direct mode: UNAVAILABLE; the daemon, reconnecting to the server, may leave it unanswered (OUTCOME_UNKNOWN).
      assert.match(err.message, /\((UNAVAILABLE|OUTCOME_UNKNOWN|TIMEOUT): /);
    }
  } finally {
    await server().resume();
  }
}

test("direct mode: appends while the server is down are spooled, then applied once, in order, before the next write", async (t) => {
  const url = server.fresh(t);
  const dir = join(shortTempDir(t), "spool");
  const db = await openSessionDB({ path: url, mode: "direct", requestTimeoutMs: 1000, spool: { dir } });
  t.after(() => db.close());
  await db.createSession("s", "cli");
  await db.appendMessage("s", { role: "user", content: "before" });
  await spooledWhileDown(db, ["down 0", "down 1", "down 2"]);
  const spool = new SpoolFile(databaseIdentity(locateDatabase(url)), dir);
  assert.equal((await spool.pending()).length, 3);
  await db.appendMessage("s", { role: "user", content: "after" });
  assert.deepEqual((await db.getMessages("s")).map((m) => m.content), ["before", "down 0", "down 1", "down 2", "after"]);
  assert.equal(spool.size(), 0);
});

test("a daemon on PostgreSQL replays on its own, once the server is back, what its clients spooled while it was down", async (t) => {
  const url = server.fresh(t);
  const home = join(shortTempDir(t), "state");
  const dir = join(home, "sessiondb", "spool");
  const daemon = await startDaemon(t, url, { socketPath: `${shortTempDir(t)}/d.sock`, env: { XDG_STATE_HOME: home } });
  const db = await daemon.open(t, { requestTimeoutMs: 1000, spool: { dir } });
  await db.createSession("s", "cli");
  await spooledWhileDown(db, ["down 0", "down 1"]);
  const spool = new SpoolFile(databaseIdentity(locateDatabase(url)), dir);
  await waitUntil("the daemon to replay the spool", () => spool.size() === 0);
  assert.deepEqual((await db.getMessages("s")).map((m) => m.content), ["down 0", "down 1"]);
});

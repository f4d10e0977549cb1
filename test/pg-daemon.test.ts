/** The daemon's group commit on PostgreSQL: one transaction per batch, a savepoint per request. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { SessionDBError } from "../src/index.js";
import { daemonStats, shortTempDir, startDaemon } from "./helpers/daemon.js";
import { usePgServer } from "./helpers/postgres.js";

const server = usePgServer();

test("a failing request in a batch fails alone; the others in its transaction commit", async (t) => {
  const url = server.fresh(t);
  const daemon = await startDaemon(t, url, { socketPath: `${shortTempDir(t)}/d.sock` });
  const db = await daemon.open(t);
  await db.createSession("s", "cli");
  await db.createSession("titled", "cli");
  await db.setSessionTitle("titled", "taken");
  // Sent together, without waiting: they queue while the writer is busy and share transactions.
  const calls = Array.from({ length: 300 }, (_, i) => {
    if (i % 10 === 3) return db.appendMessage("missing", { role: "user", content: `lost ${i}` });
    if (i % 10 === 7) return db.setSessionTitle("s", "taken");
    return db.appendMessage("s", { role: "user", content: `kept ${i}` });
  });
  const outcomes = await Promise.allSettled(calls);
  outcomes.forEach((o, i) => {
    if (i % 10 === 3) assert.equal(o.status === "rejected" && (o.reason as SessionDBError).code, "CONSTRAINT", `call ${i}`);
    else if (i % 10 === 7) assert.equal(o.status === "rejected" && (o.reason as SessionDBError).code, "TITLE_IN_USE", `call ${i}`);
    else assert.equal(o.status, "fulfilled", `call ${i}`);
  });
  const kept = (await db.getMessages("s")).map((m) => m.content);
  assert.equal(kept.length, 240);
  assert.ok(kept.every((c) => c?.startsWith("kept")));
  assert.equal((await db.getSession("s"))?.message_count, 240);
  assert.equal(await db.getSessionTitle("s"), null);
  const stats = await daemonStats(db);
  assert.equal(stats.engine, "postgres");
  assert.ok(stats.writer.maxBatchSize > 1, `requests shared a transaction (largest batch ${stats.writer.maxBatchSize})`);
});

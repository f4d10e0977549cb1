/** The daemon's group commit on PostgreSQL: one transaction per batch, a savepoint per request. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { openSessionDB, SessionDBError, type SessionDB } from "../../src/index.js";
import { daemonStats, shortTempDir, startDaemon } from "../helpers/daemon.js";
import { usePgServer } from "../helpers/postgres.js";
import { isAlive } from "../helpers/processes.js";
import { waitUntil } from "../helpers/wait-until.js";

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

test("autostart on a URL: the daemon's command line keeps the URL's connection settings and none of its secrets; its password is in the daemon's environment", async (t) => {
  let db: SessionDB | null = null;
  // Added before the database's own hook, so the daemon stops before its database is dropped.
  t.after(async () => {
    if (db?.daemon == null) return;
    const { pid } = db.daemon.server;
    await db.daemon.shutdown();
    await db.close();
    await waitUntil("the autostarted daemon to exit", () => !isAlive(pid));
  });
  const base = server.fresh(t).replace("postgresql:///", "postgresql://postgres:s3cret@/");
  const url = `${base}&sslmode=disable&sslpassword=k3y&application_name=gateway`;
  db = await openSessionDB({ path: url, mode: "daemon", autostart: true });
  assert.ok(db.daemon !== null);
  await db.createSession("s", "cli");
  const { pid } = await db.daemon.hello();
  const argv = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
  const served = argv[argv.indexOf("--db") + 1];
  assert.equal(served, `${base.replace("postgres:s3cret@", "postgres@")}&sslmode=disable&application_name=gateway`);
  assert.ok(!argv.some((arg) => arg.includes("s3cret") || arg.includes("k3y")), argv.join(" "));
  assert.ok(readFileSync(`/proc/${pid}/environ`, "utf8").split("\0").includes("PGPASSWORD=s3cret"));
});

test("serve --db with a password in the URL: another local user reading /proc/<pid>/cmdline sees the URL without it", { skip: process.getuid?.() !== 0 ? "needs root to read the daemon's cmdline as another user (nobody)" : false }, async (t) => {
  const base = server.fresh(t).replace("postgresql:///", "postgresql://postgres:s3cret-pw@/");
  const url = `${base}&sslpassword=k3y-pw`;
  const daemon = await startDaemon(t, url, { socketPath: `${shortTempDir(t)}/d.sock` });
  const db = await daemon.open(t);
  await db.createSession("s", "cli");
  const asNobody = spawnSync("setpriv", ["--reuid=nobody", "--regid=nogroup", "--clear-groups", "cat", `/proc/${daemon.hello.pid}/cmdline`], { encoding: "utf8" });
  assert.equal(asNobody.status, 0, asNobody.stderr);
  const cmdline = asNobody.stdout.replace(/\0+/g, " ").trim();
  assert.ok(!cmdline.includes("s3cret-pw") && !cmdline.includes("k3y-pw"), cmdline);
  assert.ok(cmdline.includes(`--db ${base.replace("postgres:s3cret-pw@", "postgres@")} serve`), cmdline);
  await db.close();
});

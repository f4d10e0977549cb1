/**
 * An idle daemon holds no worker thread (issue 29): its reader threads start on the first read
 * and end after `serve --reader-idle` without one; its writer thread ends after `serve
 * --writer-idle` with no client connected (never while one is, however idle) and starts again as
 * the next client connects. The next reads and writes are answered as before, and the file guard
 * works meanwhile. The threads are counted in /proc (by the names the workers give them), beside
 * the daemon's own `stats`.
 */
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { test } from "node:test";
import type { HealthResult } from "../../src/protocol/control.js";
import { join } from "node:path";
import { SpoolFile } from "../../src/spool/spool-file.js";
import { daemonStats, freshDbPath, seededDatabase, shortTempDir, startDaemon } from "../helpers/daemon.js";
import { rawAll, rawGet } from "../helpers/raw-db.js";
import { waitUntil } from "../helpers/wait-until.js";

function threadCount(pid: number): number {
  return readdirSync(`/proc/${pid}/task`).length;
}

/** The daemon's threads named `name` (workers/thread-name.ts): sdb-writer, sdb-reader. */
function threadsNamed(pid: number, name: string): number {
  let n = 0;
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    try {
      if (readFileSync(`/proc/${pid}/task/${task}/comm`, "utf8").trim() === name) n++;
    } catch {
      // a thread that ended as we looked
    }
  }
  return n;
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

test("a daemon with no client for its writer idle time has no writer thread, and serves the next writes and reads correctly", async (t) => {
  const dbPath = freshDbPath(t);
  const daemon = await startDaemon(t, dbPath, { readers: 2, args: ["--writer-idle", "0.3", "--reader-idle", "0.2", "--metrics", "127.0.0.1:0"] });
  // /health over HTTP is no client of the socket: it sees the writer stopped without starting it.
  let base = "";
  await waitUntil("the metrics address logged", () => {
    base = /metrics on (http:\/\/127\.0\.0\.1:\d+)\/metrics/.exec(daemon.child.stderr)?.[1] ?? "";
    return base !== "";
  });
  const health = async (): Promise<HealthResult> => (await (await fetch(`${base}/health`)).json()) as HealthResult;
  const first = await daemon.open(t);
  await first.createSession("s", "cli");
  await first.appendMessage("s", { role: "user", content: "before the writer stopped" });
  assert.equal(threadsNamed(daemon.pid, "sdb-writer"), 1);
  await first.close();

  await waitUntil("the writer thread to end", () => threadsNamed(daemon.pid, "sdb-writer") === 0);
  const stopped = await health();
  assert.equal(stopped.writer.thread, "stopped");
  assert.ok(stopped.writer.idleStops >= 1);
  assert.match(await (await fetch(`${base}/metrics`)).text(), /^sessiondb_writer_running 0$/m);
  // Checkpointed as it ended (TRUNCATE): the database file itself holds the writes.
  assert.equal(existsSync(`${dbPath}-wal`) ? statSync(`${dbPath}-wal`).size : 0, 0, "the WAL was not checkpointed");
  assert.equal(rawGet<{ n: number }>(dbPath, "SELECT count(*) AS n FROM messages")?.n, 1);

  // The next client starts it again; its first request (a write) waits for it.
  const next = await daemon.open(t);
  await next.appendMessage("s", { role: "user", content: "after the writer started again" });
  assert.equal(threadsNamed(daemon.pid, "sdb-writer"), 1);
  const messages = await next.getMessages("s");
  assert.deepEqual(messages.map((m) => m.content), ["before the writer stopped", "after the writer started again"]);
  assert.equal((await next.getSession("s"))?.message_count, 2);
  const stats = await daemonStats(next);
  assert.equal(stats.writer.thread, "running");
  assert.ok(stats.writer.idleStops >= 1, `idleStops ${stats.writer.idleStops}`);
  assert.equal(stats.writer.restarts, 0, "an idle stop is not a restart");
  assert.equal(stats.writer.writes, 3, "the writer's figures are the daemon's, across its threads");
});

test("a client connected but idle keeps the writer thread: only no client at all ends it", async (t) => {
  const dbPath = freshDbPath(t);
  // Reader threads end after 1 s without a read: by then a writer idle time of 0.3 s would have ended the writer.
  const daemon = await startDaemon(t, dbPath, { readers: 2, args: ["--writer-idle", "0.3", "--reader-idle", "1"] });
  const gateway = await daemon.open(t);
  await gateway.createSession("s", "cli");
  assert.ok((await gateway.getSession("s")) !== null);
  await waitUntil("the reader threads to end", () => threadsNamed(daemon.pid, "sdb-reader") === 0);
  assert.equal(threadsNamed(daemon.pid, "sdb-writer"), 1, "the writer ended while a client was connected");
  const stats = await daemonStats(gateway);
  assert.equal(stats.writer.idleStops, 0);
  assert.equal(stats.writer.thread, "running");
  await gateway.appendMessage("s", { role: "user", content: "still the same thread" });
  assert.equal((await gateway.getSession("s"))?.message_count, 1);
});

test("the file guard while the writer thread is stopped: the database removed stops the daemon as when it runs", async (t) => {
  const dbPath = freshDbPath(t);
  const daemon = await startDaemon(t, dbPath, { readers: 2, args: ["--writer-idle", "0.2", "--reader-idle", "0.2"] });
  const db = await daemon.open(t);
  await db.createSession("s", "cli");
  await db.close();
  await waitUntil("the writer thread to end", () => threadsNamed(daemon.pid, "sdb-writer") === 0);
  rmSync(dbPath);
  const exited = await daemon.child.done;
  assert.match(exited.stderr, /state\.db was removed; stopping/);
  assert.equal(exited.code, 0);
  assert.equal(existsSync(daemon.socketPath), false, "the socket outlived the daemon");
  assert.equal(existsSync(dbPath), false, "the stopping daemon made the removed file again");
});

test("serve --writer-idle 0 keeps the writer thread with no client; a value that is not a number of seconds is refused", async (t) => {
  const dbPath = freshDbPath(t);
  const daemon = await startDaemon(t, dbPath, { readers: 2, args: ["--writer-idle", "0", "--reader-idle", "0.5"] });
  const db = await daemon.open(t);
  await db.createSession("s", "cli");
  assert.ok((await db.getSession("s")) !== null);
  await db.close();
  await waitUntil("the reader threads to end", () => threadsNamed(daemon.pid, "sdb-reader") === 0);
  assert.equal(threadsNamed(daemon.pid, "sdb-writer"), 1);
  await assert.rejects(() => startDaemon(t, freshDbPath(t), { args: ["--writer-idle", "-1"] }), /--writer-idle/);
});

test("a spool record written while the writer thread is stopped: the daemon starts it with no client, replays the record, and ends it again", async (t) => {
  const path = await seededDatabase(t);
  const home = join(shortTempDir(t), "state");
  const spoolDir = join(home, "sessiondb", "spool");
  const daemon = await startDaemon(t, path, { env: { XDG_STATE_HOME: home }, args: ["--writer-idle", "0.2", "--reader-idle", "0.2", "--metrics", "127.0.0.1:0"] });
  let base = "";
  await waitUntil("the metrics address logged", () => {
    base = /metrics on (http:\/\/127\.0\.0\.1:\d+)\/metrics/.exec(daemon.child.stderr)?.[1] ?? "";
    return base !== "";
  });
  await waitUntil("the writer thread to end", () => threadsNamed(daemon.pid, "sdb-writer") === 0);
  const spool = new SpoolFile(path, spoolDir);
  await spool.append("idle-key-1", "appendMessage", ["s", { role: "user", content: "spooled while the writer slept" }], Date.now() / 1000);
  await waitUntil("the daemon to replay the record", () => spool.size() === 0);
  const contents = rawAll<{ content: string }>(path, "SELECT content FROM messages WHERE session_id = 's'").map((r) => r.content);
  assert.deepEqual(contents, ["spooled while the writer slept"]);
  // No client came: the writer the replay started ends again.
  await waitUntil("the writer thread to end again", () => threadsNamed(daemon.pid, "sdb-writer") === 0);
  const health = (await (await fetch(`${base}/health`)).json()) as HealthResult;
  assert.ok(health.writer.idleStops >= 2, `started for the replay and ended again: idleStops ${health.writer.idleStops}`);
  assert.equal(health.clients, 0);
  const log = (await daemon.stop()).stderr;
  assert.match(log, /spool .*: replayed 1 write/);
});

/**
 * The daemon's lifecycle (SPEC §5, §2, §8) with real `serve` processes: one per database even
 * when two start at once, stale sockets, the socket's mode, SIGTERM and `shutdown` draining
 * queued writes, how clients find (or do not find) a daemon, and per-request deadlines.
 */
import assert from "node:assert/strict";
import { existsSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createServer, type Socket } from "node:net";
import { join } from "node:path";
import { test } from "node:test";
import { openSessionDB, SessionDBError, type SessionDB } from "../../src/index.js";
import { expectCode } from "../contract/fixture.js";
import {
  CLI, controlOf, daemonStats, freshDbPath, holdWriteLock, killAndWait, shortTempDir, spawnServe, startDaemon, waitUntilServing,
} from "../helpers/daemon.js";
import { Child } from "../helpers/processes.js";
import { rawAll, rawGet } from "../helpers/raw-db.js";
import { waitUntil } from "../helpers/wait-until.js";

function walBytes(dbPath: string): number {
  return existsSync(`${dbPath}-wal`) ? statSync(`${dbPath}-wal`).size : 0;
}

test("two serve processes started at the same instant: exactly one serves, the other exits non-zero naming it", async (t) => {
  for (let round = 0; round < 3; round++) {
    await t.test(`round ${round}`, async (t) => {
      const dbPath = freshDbPath(t);
      const contenders = [spawnServe(dbPath), spawnServe(dbPath)];
      t.after(() => Promise.all(contenders.map(killAndWait)));

      const loser = await Promise.race(contenders.map((c) => c.done.then(() => c)));
      const winner = contenders.find((c) => c !== loser)!;
      const lost = await loser.done;
      assert.notEqual(lost.code, 0);
      assert.match(lost.stderr, new RegExp(`^error UNAVAILABLE: a sessiondb daemon \\(pid ${winner.pid}\\) already serves `, "m"));

      const hello = await waitUntilServing(winner, `${dbPath}.sock`);
      assert.equal(hello.pid, winner.pid);
      const db = await openSessionDB({ path: dbPath, mode: "daemon" });
      await db.createSession("after-race", "cli");
      await db.close();
      process.kill(winner.pid!, "SIGTERM");
      assert.equal((await winner.done).code, 0);
    });
  }
});

test("a stale socket left by kill -9 is replaced by the next daemon; meanwhile clients see no daemon", async (t) => {
  const dbPath = freshDbPath(t);
  const first = await startDaemon(t, dbPath);
  const db = await first.open(t);
  await db.createSession("before-crash", "cli");
  const killed = await first.kill9();
  assert.equal(killed.signal, "SIGKILL");
  assert.ok(existsSync(first.socketPath), "kill -9 leaves the socket file behind");

  await expectCode(() => openSessionDB({ path: dbPath, mode: "daemon" }), "UNAVAILABLE");
  const auto = await openSessionDB({ path: dbPath, mode: "auto" });
  assert.equal(auto.mode, "direct");
  assert.equal((await auto.getSession("before-crash"))?.id, "before-crash");
  await auto.close();

  const second = await startDaemon(t, dbPath);
  assert.notEqual(second.pid, first.pid);
  const again = await second.open(t);
  assert.equal((await again.getSession("before-crash"))?.id, "before-crash");
  await again.appendMessage("before-crash", { role: "user", content: "after the restart" });
  assert.equal((await second.stop()).code, 0);
});

test("the socket file is 0600 even under a permissive umask", async (t) => {
  const dbPath = freshDbPath(t);
  const child = new Child("sh", ["-c", 'umask 000 && exec "$@"', "sh", process.execPath, CLI, "--db", dbPath, "serve", "--readers", "1"]);
  t.after(() => killAndWait(child));
  await waitUntilServing(child, `${dbPath}.sock`);
  assert.equal(statSync(`${dbPath}.sock`).mode & 0o777, 0o600);
  assert.ok(statSync(`${dbPath}.sock`).isSocket());
});

test("SIGTERM with writes queued: every acknowledged write is in the file, nothing else is, exit code 0, WAL checkpointed", async (t) => {
  const daemon = await startDaemon(t, freshDbPath(t));
  // Without keys: the writes the daemon did not read fail at once (with keys they wait for a daemon until their deadline).
  const db = await daemon.open(t, { idempotencyKeys: false });
  await db.createSession("q", "cli");

  const acknowledged: number[] = [];
  const rejected: SessionDBError[] = [];
  let firstAck!: () => void;
  const firstAcked = new Promise<void>((resolve) => (firstAck = resolve));
  const writes = Array.from({ length: 3000 }, (_, i) =>
    db.appendMessage("q", { role: "user", content: `queued ${i}` }).then(
      (id) => {
        acknowledged.push(id);
        firstAck();
      },
      (err: SessionDBError) => {
        rejected.push(err);
      },
    ),
  );
  await firstAcked;
  const ackedAtSignal = acknowledged.length;
  const finished = await daemon.stop();
  await Promise.all(writes);

  assert.equal(finished.code, 0, finished.stderr);
  assert.ok(acknowledged.length > ackedAtSignal, "writes queued at SIGTERM were finished and answered");
  for (const err of rejected) assert.ok(["UNAVAILABLE", "CLOSED"].includes(err.code), `${err.code}: ${err.message}`);
  const inFile = rawAll<{ id: number }>(daemon.dbPath, "SELECT id FROM messages WHERE session_id = 'q' ORDER BY id").map((r) => r.id);
  assert.deepEqual(inFile, [...acknowledged].sort((a, b) => a - b), "exactly the acknowledged writes");
  assert.equal(rawGet<{ n: number }>(daemon.dbPath, "SELECT message_count AS n FROM sessions WHERE id = 'q'")?.n, inFile.length);
  assert.equal(walBytes(daemon.dbPath), 0);
  assert.equal(existsSync(daemon.socketPath), false, "the socket file is removed");
});

test("the shutdown op stops the daemon cleanly; afterwards clients find none", async (t) => {
  const daemon = await startDaemon(t, freshDbPath(t));
  const db = await daemon.open(t);
  await db.createSession("s", "cli");
  const appended = db.appendMessage("s", { role: "user", content: "just before shutdown" });
  await controlOf(db).shutdown();
  assert.equal(typeof (await appended), "number");
  const finished = await daemon.child.done;
  assert.equal(finished.code, 0, finished.stderr);
  assert.equal(existsSync(daemon.socketPath), false);
  assert.equal(rawGet<{ n: number }>(daemon.dbPath, "SELECT message_count AS n FROM sessions WHERE id = 's'")?.n, 1);
  await expectCode(() => openSessionDB({ path: daemon.dbPath, mode: "daemon" }), "UNAVAILABLE");
  // The handle whose daemon went away fails at once, it does not hang.
  await expectCode(() => db.getSession("s"), "UNAVAILABLE");
});

test('mode "daemon" with no daemon fails with UNAVAILABLE, quickly, however the socket is missing', async (t) => {
  const dir = shortTempDir(t);
  const dbPath = join(dir, "state.db");

  const started = Date.now();
  const err = await expectCode(() => openSessionDB({ path: dbPath, mode: "daemon" }), "UNAVAILABLE");
  assert.ok(Date.now() - started < 5000, "no socket file: no waiting");
  assert.match(err.message, /state\.db\.sock/);

  // A socket file nobody listens on.
  writeFileSync(join(dir, "not-a-socket.sock"), "");
  await expectCode(() => openSessionDB({ path: dbPath, mode: "daemon", socketPath: join(dir, "not-a-socket.sock") }), "UNAVAILABLE");

  // Something that accepts but never answers hello.
  const accepted = new Set<Socket>();
  const silent = createServer((socket) => accepted.add(socket));
  await new Promise<void>((resolve) => silent.listen(join(dir, "silent.sock"), resolve));
  t.after(() => {
    for (const socket of accepted) socket.destroy();
    silent.close();
  });
  await expectCode(
    () => openSessionDB({ path: dbPath, mode: "daemon", socketPath: join(dir, "silent.sock"), connectTimeoutMs: 200 }),
    "UNAVAILABLE",
  );
  // "auto" takes a daemon that does not answer for no daemon.
  const fallback = await openSessionDB({ path: dbPath, socketPath: join(dir, "silent.sock"), connectTimeoutMs: 200 });
  assert.equal(fallback.mode, "direct");
  await fallback.close();
  rmSync(dbPath);

  // A daemon that serves another file.
  const other = await startDaemon(t, join(dir, "other.db"));
  await expectCode(() => openSessionDB({ path: dbPath, mode: "daemon", socketPath: other.socketPath }), "UNAVAILABLE");
  assert.equal(existsSync(dbPath), false, "mode daemon never creates the file itself");
});

test('mode "auto" is direct when no daemon answers and daemon when one does', async (t) => {
  const dbPath = freshDbPath(t);
  const before = await openSessionDB({ path: dbPath, mode: "auto" });
  assert.equal(before.mode, "direct");
  await before.createSession("direct-made", "cli");
  await before.close();

  const daemon = await startDaemon(t, dbPath);
  const during = await openSessionDB({ path: dbPath });
  t.after(() => during.close());
  assert.equal(during.mode, "daemon");
  assert.equal((await during.getSession("direct-made"))?.id, "direct-made");
  await during.appendMessage("direct-made", { role: "user", content: "through the daemon" });

  // When the daemon goes away, the auto handle carries on in direct mode.
  await daemon.kill9();
  assert.equal((await during.getMessages("direct-made")).length, 1);
  assert.equal(during.mode, "direct");
  await during.appendMessage("direct-made", { role: "user", content: "directly" });
  assert.equal(rawGet<{ n: number }>(dbPath, "SELECT message_count AS n FROM sessions WHERE id = 'direct-made'")?.n, 2);
});

test("calls after close reject with CLOSED against a real daemon, and the daemon sees the client go", async (t) => {
  const daemon = await startDaemon(t, freshDbPath(t));
  const db = await daemon.open(t);
  await db.createSession("s", "cli");
  await db.close();
  await expectCode(() => db.getSession("s"), "CLOSED");
  await expectCode(() => db.appendMessage("s", { role: "user", content: "late" }), "CLOSED");
  const watcher = await daemon.open(t);
  await waitUntil("the closed client's connection gone", async () => (await daemonStats(watcher)).clients === 1);
});

test("a write that outlives its deadline behind another process's lock fails with TIMEOUT and is never applied", async (t) => {
  const daemon = await startDaemon(t, freshDbPath(t));
  const setup = await daemon.open(t);
  await setup.createSession("s", "cli");
  const hurried: SessionDB = await daemon.open(t, { requestTimeoutMs: 300 });

  const lock = await holdWriteLock(t, daemon.dbPath);
  // Heard from the start: it may time out before the read below is answered (the first read starts a reader thread).
  const late = expectCode(() => hurried.appendMessage("s", { role: "user", content: "too late to write" }), "TIMEOUT");
  // Reads go on while the lock is held (on the unhurried client: this read is not the subject).
  assert.equal((await setup.getSession("s"))?.message_count, 0);
  await late;
  await lock.release();

  // A later write on the same daemon goes through; the timed-out one never does.
  await setup.appendMessage("s", { role: "user", content: "in time" });
  assert.deepEqual(rawAll(daemon.dbPath, "SELECT content FROM messages WHERE session_id = 's'"), [{ content: "in time" }]);
  assert.equal(rawGet<{ n: number }>(daemon.dbPath, "SELECT message_count AS n FROM sessions WHERE id = 's'")?.n, 1);
  assert.equal(rawGet<{ n: number }>(daemon.dbPath, "SELECT COUNT(*) AS n FROM messages WHERE session_id = 'lock-holder'")?.n, 1);
});

test("create: false: a missing database is NOT_FOUND in every mode that would open it, and nothing is created", async (t) => {
  const dir = join(shortTempDir(t), "nowhere");
  const path = join(dir, "missing.db");
  for (const mode of ["auto", "direct"] as const) {
    await expectCode(() => openSessionDB({ path, mode, create: false }), "NOT_FOUND");
  }
  assert.equal(existsSync(dir), false, "not even the directory was made");
});

test("a handle names its files and, in daemon mode, its daemon; a direct handle has no daemon", async (t) => {
  const path = freshDbPath(t);
  const daemon = await startDaemon(t, path);
  const viaDaemon = await daemon.open(t);
  assert.equal(viaDaemon.files.db, daemon.hello.database);
  assert.equal(viaDaemon.files.wal, `${daemon.hello.database}-wal`);
  assert.equal(viaDaemon.files.socket, daemon.socketPath);
  assert.equal(controlOf(viaDaemon).server.pid, daemon.pid);
  const auto = await openSessionDB({ path, socketPath: daemon.socketPath });
  t.after(() => auto.close());
  assert.equal(auto.daemon?.server.pid, daemon.pid);
  const direct = await openSessionDB({ path, mode: "direct" });
  t.after(() => direct.close());
  assert.equal(direct.daemon, null);
  assert.equal(direct.files.db, viaDaemon.files.db);
});

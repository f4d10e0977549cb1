/**
 * Daemons started on demand (SPEC §5): `serve --idle-exit SECONDS` ends a daemon with no client,
 * and `openSessionDB({ autostart: true })` starts one when none answers.
 */
import assert from "node:assert/strict";
import { chmodSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test, type TestContext } from "node:test";
import { Daemon } from "../../src/daemon/daemon.js";
import { fileIdentity } from "../../src/file-identity.js";
import { identitySocketPath } from "../../src/socket-path.js";
import { rawGet } from "../helpers/raw-db.js";
import { waitUntil } from "../helpers/wait-until.js";
import { openSessionDB, type SessionDB } from "../../src/index.js";
import { expectCode } from "../contract/fixture.js";
import { CLI, freshDbPath, killAndWait, waitUntilServing } from "../helpers/daemon.js";
import { Child, isAlive } from "../helpers/processes.js";
import { removeTree } from "../helpers/temp-dir.js";

test("serve --idle-exit: keeps serving while a client is connected, then exits 0 once none is", async (t) => {
  const dbPath = freshDbPath(t);
  // The spell starts when the daemon listens: on a loaded machine it can pass before this test's
  // client connects, and the daemon then rightly leaves. That start is tried again (a daemon that
  // left with a client connected fails the test below).
  let child: Child | null = null;
  let db: SessionDB | null = null;
  for (let attempt = 1; db === null; attempt++) {
    const started = new Child(process.execPath, [CLI, "--db", dbPath, "serve", "--readers", "2", "--idle-exit", "1"]);
    t.after(() => killAndWait(started));
    try {
      await waitUntilServing(started, `${dbPath}.sock`);
      db = await openSessionDB({ path: dbPath, mode: "daemon" });
      child = started;
    } catch (err) {
      const finished = await started.done;
      if (attempt === 5 || !/no client for 1 s \(--idle-exit\): stopping/.test(finished.stderr)) throw err;
    }
  }
  await db.createSession("s", "cli");
  await waitForUptime(db, 2.5); // several idle spells with a client connected
  assert.equal(await db.sessionCount(), 1, "still serving");
  await db.close();
  const finished = await child!.done;
  assert.equal(finished.code, 0);
  assert.match(finished.stderr, /no client for 1 s \(--idle-exit\): stopping/);
  assert.equal(existsSync(`${dbPath}.sock`), false, "socket removed");
});

test("serve --idle-exit rejects a value that is not a positive number", async (t) => {
  const child = new Child(process.execPath, [CLI, "--db", freshDbPath(t), "serve", "--idle-exit", "soon"]);
  t.after(() => killAndWait(child));
  const finished = await child.done;
  assert.notEqual(finished.code, 0);
  assert.match(finished.stderr, /--idle-exit.*positive number of seconds/);
});

/**
 * Waits until the daemon has been up `seconds` by its own clock, asking it through `db` (whose
 * connection stays open): a spell the daemon timed from its start has then passed on its side,
 * however late this test's own timers run.
 */
async function waitForUptime(db: SessionDB, seconds: number): Promise<void> {
  const control = db.daemon;
  assert.ok(control !== null);
  await waitUntil(`the daemon up ${seconds} s`, async () => (await control.stats()).uptimeS >= seconds);
}

/** Stops the daemon a test autostarted and waits until its process is gone. */
async function stopDaemon(dbPath: string): Promise<void> {
  const db = await openSessionDB({ path: dbPath, mode: "daemon" });
  assert.ok(db.daemon !== null);
  const { pid } = db.daemon.server;
  await db.daemon.shutdown();
  await db.close();
  await waitUntil(`the stopped daemon (pid ${pid}) to exit`, () => !isAlive(pid));
}

function withBin(t: TestContext, bin: string | undefined): void {
  const before = process.env.SESSIONDB_BIN;
  if (bin === undefined) delete process.env.SESSIONDB_BIN;
  else process.env.SESSIONDB_BIN = bin;
  t.after(() => {
    if (before === undefined) delete process.env.SESSIONDB_BIN;
    else process.env.SESSIONDB_BIN = before;
  });
}

test("autostart: no daemon answers, so one is started detached with --idle-exit 30 and serves the handle", async (t) => {
  withBin(t, undefined); // this package's own CLI
  const dir = mkdtempSync("/tmp/sdb-");
  const dbPath = join(dir, "state.db");
  const handles: SessionDB[] = [];
  // One hook, in this order: hooks run in the order they were added, and the daemon must be
  // stopped before its directory goes.
  t.after(async () => {
    for (const handle of handles) await handle.close();
    await stopDaemon(dbPath);
    removeTree(dir);
  });
  const db = await openSessionDB({ path: dbPath, mode: "daemon", autostart: true });
  handles.push(db);
  assert.equal(db.mode, "daemon");
  assert.ok(db.daemon !== null);
  const { pid } = await db.daemon.hello();
  assert.notEqual(pid, process.pid);
  await db.createSession("s", "cli");
  assert.equal(await db.sessionCount(), 1);
  const argv = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
  assert.deepEqual(argv.slice(-3, -1), ["--idle-exit", "30"]);
  assert.equal(db.files.daemonLog, join(dir, "state.db.daemon.log"));
  assert.ok(existsSync(db.files.daemonLog), "its output goes to a log beside the socket");

  const again = await openSessionDB({ path: dbPath, mode: "auto", autostart: true });
  handles.push(again);
  assert.equal(again.mode, "daemon");
  assert.equal(await again.sessionCount(), 1, "the second handle found the same daemon");
});

test("autostart is off by default: mode auto stays direct and mode daemon is UNAVAILABLE", async (t) => {
  const dbPath = freshDbPath(t);
  const db = await openSessionDB({ path: dbPath });
  t.after(() => db.close());
  assert.equal(db.mode, "direct");
  await expectCode(() => openSessionDB({ path: dbPath, mode: "daemon" }), "UNAVAILABLE");
  assert.equal(existsSync(`${dbPath}.sock`), false);
});

test("autostart of a daemon that cannot start: daemon mode is UNAVAILABLE naming the log, auto falls back to direct", async (t) => {
  const dbPath = freshDbPath(t);
  const broken = join(dbPath, "..", "broken-bin");
  writeFileSync(broken, "#!/bin/sh\necho cannot start >&2\nexit 3\n");
  chmodSync(broken, 0o755);
  withBin(t, broken);
  const err = await expectCode(() => openSessionDB({ path: dbPath, mode: "daemon", autostart: true }), "UNAVAILABLE");
  assert.match(err.message, /exited with status 3; see .*state\.db\.daemon\.log/);
  const db = await openSessionDB({ path: dbPath, autostart: true });
  t.after(() => db.close());
  assert.equal(db.mode, "direct");
});

test("autostart must be a boolean", async () => {
  await expectCode(() => openSessionDB({ autostart: "yes" as unknown as boolean }), "INVALID_ARGUMENT");
});

test("autostart with create: false and no file: NOT_FOUND, and neither a daemon nor the file appears", async (t) => {
  const dbPath = freshDbPath(t);
  withBin(t, undefined);
  for (const mode of ["daemon", "auto"] as const) {
    await expectCode(() => openSessionDB({ path: dbPath, mode, autostart: true, create: false }), "NOT_FOUND");
  }
  assert.equal(existsSync(dbPath), false, "no file created");
  assert.equal(existsSync(`${dbPath}.sock`), false, "no daemon started");
});

test("the daemon option idleExitMs must be a positive number", async (t) => {
  const dbPath = freshDbPath(t);
  await expectCode(() => Daemon.start({ path: dbPath, idleExitMs: 0 }), "INVALID_ARGUMENT");
  assert.equal(existsSync(`${dbPath}.sock`), false);
});

/** `name` in this process's environment is restored when the test ends (clients read it as they open). */
function restoringEnv(t: TestContext, name: string): void {
  const before = process.env[name];
  t.after(() => {
    if (before === undefined) delete process.env[name];
    else process.env[name] = before;
  });
}

test("an autostarted daemon leaves once its last client closed: gone within its idle spell, checkpointed, its files removed, the database intact", async (t) => {
  withBin(t, undefined);
  const dir = mkdtempSync("/tmp/sdb-");
  t.after(() => removeTree(dir));
  const dbPath = join(dir, "state.db");
  const db = await openSessionDB({ path: dbPath, mode: "daemon", autostart: true, autostartIdleExitMs: 1000 });
  assert.ok(db.daemon !== null);
  const { pid } = db.daemon.server;
  t.after(() => {
    if (isAlive(pid)) process.kill(pid, "SIGKILL");
  });
  assert.deepEqual(readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").slice(-3, -1), ["--idle-exit", "1"]);
  const identity = fileIdentity(dbPath);
  assert.ok(identity !== null);
  const identitySocket = identitySocketPath(identity);
  await db.createSession("s", "cli");
  for (let i = 0; i < 20; i++) await db.appendMessage("s", { role: "user", content: `message ${i}` });
  await waitForUptime(db, 2.5); // over two idle spells with a client connected: it stays
  assert.equal(await db.messageCount({ sessionId: "s" }), 20, "the daemon left while a client was connected");
  await db.close();

  await waitUntil("the autostarted daemon to exit", () => !isAlive(pid));
  assert.match(readFileSync(db.files.daemonLog, "utf8"), /no client for 1 s \(--idle-exit\): stopping[\s\S]*stopped \(checkpointed, socket removed\)/);
  for (const file of [`${dbPath}.sock`, identitySocket, `${dbPath}-wal`, `${dbPath}-shm`]) {
    assert.equal(existsSync(file), false, `${file} was left behind`);
  }
  assert.equal(rawGet<{ integrity_check: string }>(dbPath, "PRAGMA integrity_check")?.integrity_check, "ok");
  assert.equal(rawGet<{ n: number }>(dbPath, "SELECT COUNT(*) AS n FROM messages WHERE session_id = 's'")?.n, 20);
});

test("SESSIONDB_AUTOSTART=0 (or false) turns autostart off whatever the code asks: auto goes direct, daemon is UNAVAILABLE, no daemon starts", async (t) => {
  withBin(t, undefined);
  restoringEnv(t, "SESSIONDB_AUTOSTART");
  for (const value of ["0", "false", "FALSE"]) {
    process.env.SESSIONDB_AUTOSTART = value;
    const dbPath = freshDbPath(t);
    const db = await openSessionDB({ path: dbPath, autostart: true });
    t.after(() => db.close());
    assert.equal(db.mode, "direct", `SESSIONDB_AUTOSTART=${value}`);
    await db.createSession("s", "cli");
    const err = await expectCode(() => openSessionDB({ path: dbPath, mode: "daemon", autostart: true }), "UNAVAILABLE");
    assert.doesNotMatch(err.message, /autostart started/);
    assert.match(err.message, new RegExp(`autostart is off \\(SESSIONDB_AUTOSTART=${value}\\)`), "the error says why no daemon was started");
    assert.equal(existsSync(`${dbPath}.sock`), false, "a daemon was started");
    assert.equal(existsSync(db.files.daemonLog), false, "a daemon was started");
  }
});

test("autostartIdleExitMs must be a positive number", async () => {
  for (const bad of [0, -1, Number.NaN, "30" as unknown as number]) {
    await expectCode(() => openSessionDB({ autostart: true, autostartIdleExitMs: bad }), "INVALID_ARGUMENT");
  }
});

/**
 * The durable spool and the daemon (issue 25 item 3, docs/spool.md): daemon-mode writers while
 * another process holds the lock past their deadline get SPOOLED, and the daemon replays them on
 * its own once it can write, exactly once, in order; the daemon replays a spool on start, one
 * the Python client wrote included; and the Python client replays one the TypeScript client
 * wrote. Each daemon gets its own `$XDG_STATE_HOME`, so its spool folder is the test's.
 */
import assert from "node:assert/strict";
import { chmodSync, statSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { openSessionDB, SessionDBError, SpooledError } from "../../src/index.js";
import { SpoolFile } from "../../src/spool/spool-file.js";
import { holdWriteLock, seededDatabase, shortTempDir, startDaemon } from "../helpers/daemon.js";
import { Child, lastJsonLine, runToSuccess, sourceFixture } from "../helpers/processes.js";
import { rawAll } from "../helpers/raw-db.js";
import { waitUntil } from "../helpers/wait-until.js";

const PYTHON_PACKAGE = fileURLToPath(new URL("../../../python", import.meta.url));

function python(...args: string[]): Child {
  return new Child("python3", [sourceFixture("spool_client.py"), ...args], { env: { ...process.env, PYTHONPATH: PYTHON_PACKAGE } });
}

function contents(path: string, session = "s"): string[] {
  return rawAll<{ content: string }>(path, "SELECT content FROM messages WHERE session_id = ? ORDER BY timestamp, id", session).map((r) => r.content);
}

/** A state folder for the daemon's environment, and the spool folder inside it. */
function stateHome(t: Parameters<typeof shortTempDir>[0]): { env: NodeJS.ProcessEnv; spoolDir: string } {
  const home = join(shortTempDir(t), "state");
  return { env: { XDG_STATE_HOME: home }, spoolDir: join(home, "sessiondb", "spool") };
}

test("daemon mode: appends past their deadline while another process holds the lock are spooled; the daemon replays them once, in order, when it can write", async (t) => {
  const path = await seededDatabase(t);
  const { env, spoolDir } = stateHome(t);
  const daemon = await startDaemon(t, path, { env });
  const db = await daemon.open(t, { requestTimeoutMs: 500, spool: { dir: spoolDir } });
  await db.appendMessage("s", { role: "user", content: "before" });
  const lock = await holdWriteLock(t, path);
  for (let i = 0; i < 4; i++) {
    const err = await db.appendMessage("s", { role: "user", content: `spooled ${i}` }).catch((e: unknown) => e);
    assert.ok(err instanceof SpooledError, String(err));
    assert.match(err.message, /TIMEOUT|OUTCOME_UNKNOWN/);
  }
  const spool = new SpoolFile(path, spoolDir);
  assert.equal((await spool.pending()).length, 4);
  await lock.release();
  // No write of the client's: the daemon itself replays once the file is free.
  await waitUntil("the daemon to replay the spool", () => spool.size() === 0);
  assert.deepEqual(contents(path), ["before", "spooled 0", "spooled 1", "spooled 2", "spooled 3"]);
  await db.appendMessage("s", { role: "user", content: "after" });
  assert.deepEqual(contents(path), ["before", "spooled 0", "spooled 1", "spooled 2", "spooled 3", "after"]);
  const log = (await daemon.stop()).stderr;
  assert.match(log, /spool .*: replayed \d write/);
});

test("a daemon replays on start what the Python client spooled, and the Python client replays what the TypeScript client spooled", async (t) => {
  const path = await seededDatabase(t);
  const { env, spoolDir } = stateHome(t);
  // Python's record, in the daemon's own spool folder, before the daemon starts.
  await runToSuccess(python("append", spoolDir, path, "py-key-1", "s", "from python"));
  assert.equal(statSync(spoolDir).mode & 0o777, 0o700);
  const daemon = await startDaemon(t, path, { env });
  const spool = new SpoolFile(path, spoolDir);
  await waitUntil("the daemon to replay Python's record", () => spool.size() === 0);
  assert.deepEqual(contents(path), ["from python"]);

  // TypeScript's record, in a folder the daemon does not read: the Python handle opening with it replays it.
  const other = join(shortTempDir(t), "spool");
  const tsSpool = new SpoolFile(path, other);
  await tsSpool.append("ts-key-1", "appendMessage", ["s", { role: "user", content: "from typescript" }], Date.now() / 1000);
  const report = lastJsonLine<{ pending: number }>(await runToSuccess(python("replay", other, path, daemon.socketPath)));
  assert.equal(report.pending, 0);
  assert.deepEqual(contents(path), ["from python", "from typescript"]);
  // Each once, under its own key.
  const keys = rawAll<{ key: string }>(path, "SELECT key FROM sessiondb_idempotency WHERE key IN ('py-key-1', 'ts-key-1') ORDER BY key");
  assert.deepEqual(keys.map((k) => k.key), ["py-key-1", "ts-key-1"]);
});

test("a daemon never replays a spool others may write: it says so, and the records stay until the file is private again", async (t) => {
  const path = await seededDatabase(t);
  const { env, spoolDir } = stateHome(t);
  const spool = new SpoolFile(path, spoolDir);
  await spool.append("planted-1", "appendMessage", ["s", { role: "user", content: "planted?" }], 1);
  chmodSync(spool.path, 0o662);
  const daemon = await startDaemon(t, path, { env });
  const db = await daemon.open(t);
  await db.appendMessage("s", { role: "user", content: "served" });
  await waitUntil("the daemon to say why it does not replay", () => /spool .*cannot replay yet \(PERMISSION/.test(daemon.child.stderr));
  assert.deepEqual(contents(path), ["served"]);
  await assert.rejects(spool.pending(), (e: SessionDBError) => e.code === "PERMISSION");
  // Made private again by its owner: the change is seen, and the record replayed.
  chmodSync(spool.path, 0o600);
  await waitUntil("the daemon to replay the file made private", () => spool.size() === 0);
  assert.deepEqual(contents(path), ["planted?", "served"]); // by time: the record's is 1 s past the epoch
});

test("mode daemon with the daemon killed and none restarted: writes past their deadline are spooled, and the next daemon replays them on start", async (t) => {
  const path = await seededDatabase(t);
  const { env, spoolDir } = stateHome(t);
  const first = await startDaemon(t, path, { env });
  const db = await first.open(t, { requestTimeoutMs: 1000, spool: { dir: spoolDir } });
  await db.appendMessage("s", { role: "user", content: "before" });
  await first.kill9();
  for (const content of ["gone 0", "gone 1"]) {
    const err = await db.appendMessage("s", { role: "user", content }).catch((e: unknown) => e);
    assert.ok(err instanceof SpooledError, String(err));
    assert.match(err.message, /\((UNAVAILABLE|TIMEOUT): /);
  }
  const spool = new SpoolFile(path, spoolDir);
  assert.equal((await spool.pending()).length, 2);
  await startDaemon(t, path, { env });
  await waitUntil("the new daemon to replay the spool", () => spool.size() === 0);
  assert.deepEqual(contents(path), ["before", "gone 0", "gone 1"]);
  await db.appendMessage("s", { role: "user", content: "after" }); // the handle reconnects to the new daemon
  assert.deepEqual(contents(path), ["before", "gone 0", "gone 1", "after"]);
});

test("auto mode: failing over to direct mode replays this user's spool first (spool option or not)", async (t) => {
  const path = await seededDatabase(t);
  const { env, spoolDir } = stateHome(t);
  // The handle's own default spool folder is the test's (restored after).
  const saved = process.env.XDG_STATE_HOME;
  process.env.XDG_STATE_HOME = env.XDG_STATE_HOME;
  t.after(() => {
    if (saved === undefined) delete process.env.XDG_STATE_HOME;
    else process.env.XDG_STATE_HOME = saved;
  });
  const daemon = await startDaemon(t, path, { env });
  const db = await openSessionDB({ path, socketPath: daemon.socketPath, mode: "auto" });
  t.after(() => db.close());
  await db.appendMessage("s", { role: "user", content: "before" });
  await daemon.kill9();
  // Records some other handle spooled while no daemon ran.
  const spool = new SpoolFile(path, spoolDir);
  await spool.append("other-1", "appendMessage", ["s", { role: "user", content: "spooled elsewhere" }], Date.now() / 1000);
  await db.appendMessage("s", { role: "user", content: "after" });
  assert.equal(db.mode, "direct");
  assert.deepEqual(contents(path), ["before", "spooled elsewhere", "after"]);
  assert.equal(spool.size(), 0);
});

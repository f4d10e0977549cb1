/**
 * The daemon's guard on the database file itself (src/file-guard.ts) and the lock files around it
 * (issues 23 and 30): the guard is seen through every name of the file and dropped by the kernel
 * when the daemon dies; lock files are removed by the daemon that lets go of them, stale ones of
 * dead daemons by the next daemon or client that finds them, and a live daemon's never.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, linkSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test, type TestContext } from "node:test";
import Database from "better-sqlite3";
import { Daemon } from "../../src/daemon/daemon.js";
import { fileGuardState } from "../../src/file-guard.js";
import { fileIdentity, identityName } from "../../src/file-identity.js";
import { openSessionDB } from "../../src/index.js";
import { expectCode } from "../contract/fixture.js";
import { shortTempDir, startDaemon } from "../helpers/daemon.js";
import { waitUntil } from "../helpers/wait-until.js";

/** A runtime folder of the test's own (children inherit it): the shared one is every other test's. */
function ownRuntimeDir(t: TestContext, dir: string): string {
  const runtime = join(dir, "run");
  const before = process.env.XDG_RUNTIME_DIR;
  process.env.XDG_RUNTIME_DIR = runtime;
  t.after(() => {
    if (before === undefined) delete process.env.XDG_RUNTIME_DIR;
    else process.env.XDG_RUNTIME_DIR = before;
  });
  return join(runtime, "sessiondb");
}

/** A lock file as a daemon leaves it: a small SQLite file. */
function lockFile(path: string): void {
  const db = new Database(path);
  db.exec("CREATE TABLE daemon (pid INTEGER NOT NULL, started_at REAL NOT NULL)");
  db.close();
}

/** Whether another process can take a shared flock on the file now (util-linux flock, as any tool would). */
function outsiderCanLock(path: string): boolean {
  return spawnSync("flock", ["-n", "-s", "-E", "75", path, "true"]).status === 0;
}

test("the guard: held on the file by every name while a daemon serves it, dropped when it is killed", async (t) => {
  const dir = shortTempDir(t);
  ownRuntimeDir(t, dir);
  const dbPath = join(dir, "state.db");
  const daemon = await startDaemon(t, dbPath);
  const alias = join(dir, "alias.db");
  linkSync(dbPath, alias);
  assert.equal(await fileGuardState(dbPath), "held");
  assert.equal(await fileGuardState(alias), "held");
  assert.equal(outsiderCanLock(alias), false, "the daemon's flock is on the inode, seen through the hard link");
  await daemon.kill9();
  assert.equal(await fileGuardState(alias), "free");
  assert.equal(outsiderCanLock(dbPath), true);
});

test("two daemons of one process on one file: the second is refused (flock alone would let it in)", async (t) => {
  const dir = shortTempDir(t);
  ownRuntimeDir(t, dir);
  const dbPath = join(dir, "state.db");
  const alias = join(dir, "alias.db");
  const first = await Daemon.start({ path: dbPath, readers: 1 });
  t.after(() => first.close());
  linkSync(dbPath, alias);
  const err = await expectCode(() => Daemon.start({ path: alias, readers: 1 }), "UNAVAILABLE");
  assert.match(err.message, /already serves .*alias\.db under another name/);
  await first.close();
  const again = await Daemon.start({ path: alias, readers: 1 });
  await again.close();
});

test("lock files: a clean stop removes its own; stale ones of dead daemons go with the next daemon or client; a held one stays", async (t) => {
  const dir = shortTempDir(t);
  const runtime = ownRuntimeDir(t, dir);
  mkdirSync(runtime, { recursive: true, mode: 0o700 });
  // What earlier versions left in the runtime folder, one per file ever served.
  const stale = join(runtime, "inode-1-2.daemon-lock");
  lockFile(stale);
  writeFileSync(`${stale}-journal`, "");
  // A dead daemon's lock of a PostgreSQL database (named by a hash of its identity).
  const pgStale = join(runtime, "0123456789abcdef0123456789abcdef.daemon-lock");
  lockFile(pgStale);
  const orphanJournal = join(runtime, "inode-5-6.daemon-lock-journal");
  writeFileSync(orphanJournal, "");
  const held = join(runtime, "inode-3-4.daemon-lock");
  lockFile(held);
  const holder = new Database(held, { timeout: 0 });
  t.after(() => holder.close());
  holder.pragma("locking_mode = EXCLUSIVE");
  holder.exec("BEGIN EXCLUSIVE");

  const dbPath = join(dir, "state.db");
  const daemon = await startDaemon(t, dbPath);
  await waitUntil("the stale identity lock removed by the daemon", () => !existsSync(stale));
  assert.equal(existsSync(`${stale}-journal`), false);
  assert.equal(existsSync(pgStale), false, "a dead daemon's PostgreSQL lock file stayed");
  assert.equal(existsSync(orphanJournal), false);
  assert.equal(existsSync(held), true, "a lock file a live process holds was removed");
  const stopped = await daemon.stop();
  assert.equal(stopped.code, 0);
  assert.match(stopped.stderr, /removed 2 stale lock file\(s\) of daemons that are gone/);
  assert.equal(existsSync(`${dbPath}.daemon-lock`), false, "a clean stop leaves its lock file behind");

  const killed = await startDaemon(t, dbPath);
  assert.equal(existsSync(`${dbPath}.daemon-lock`), true);
  await killed.kill9();
  assert.equal(existsSync(`${dbPath}.daemon-lock`), true, "kill -9 leaves the lock file (nothing can remove it then)");
  const legacy = join(runtime, `${identityName(fileIdentity(dbPath)!)}.daemon-lock`);
  lockFile(legacy);
  const db = await openSessionDB({ path: dbPath });
  t.after(() => db.close());
  assert.equal(db.mode, "direct");
  assert.equal(existsSync(`${dbPath}.daemon-lock`), false, "the next client left the dead daemon's lock file");
  assert.equal(existsSync(legacy), false, "the next client left the file's stale identity lock");
});

test("no flock(1) on PATH: the daemon says so, falls back to a lock file in the runtime folder, and serves", async (t) => {
  const dir = shortTempDir(t);
  const runtime = ownRuntimeDir(t, dir);
  const dbPath = join(dir, "state.db");
  const daemon = await startDaemon(t, dbPath, { env: { PATH: join(dir, "no-bin") } });
  const db = await daemon.open(t);
  await db.createSession("s", "cli");
  assert.equal(existsSync(join(runtime, `${identityName(fileIdentity(dbPath)!)}.daemon-lock`)), true);
  const stopped = await daemon.stop();
  assert.equal(stopped.code, 0, stopped.stderr);
  assert.match(stopped.stderr, /flock\(1\) \(util-linux\) cannot be run here: one daemon per file is guarded by a lock file in the runtime folder only/);
});

test("a file bind-mounted under another name (one link): direct mode through it writes under the daemon's name", async (t) => {
  if (process.getuid?.() !== 0 || spawnSync("unshare", ["-m", "true"]).status !== 0) return t.skip("needs root and unshare -m");
  const dir = shortTempDir(t);
  ownRuntimeDir(t, dir);
  mkdirSync(join(dir, "a"));
  mkdirSync(join(dir, "b"));
  const served = join(dir, "a", "state.db");
  const mounted = join(dir, "b", "mounted.db");
  const daemon = await startDaemon(t, served);
  writeFileSync(mounted, "");
  // In a mount namespace of its own: the bind mount is that child's alone and goes with it.
  const index = new URL("../../src/index.js", import.meta.url).href;
  const script = `const { openSessionDB } = await import(${JSON.stringify(index)});
const db = await openSessionDB({ path: process.argv[1], mode: "direct" });
await db.createSession("through-the-mount", "cli");
console.log(db.files.db);
await db.close();`;
  const child = spawnSync("unshare", ["-m", "sh", "-c", 'mount --bind "$1" "$2" && exec "$3" --input-type=module -e "$4" "$2"', "sh", served, mounted, process.execPath, script], {
    encoding: "utf8",
    env: process.env,
  });
  assert.equal(child.status, 0, child.stderr);
  assert.equal(child.stdout.trim(), served, "direct mode opened the file by the mount's name, beside the daemon's WAL");
  assert.equal(existsSync(`${mounted}-wal`), false);
  const db = await daemon.open(t);
  assert.notEqual(await db.getSession("through-the-mount"), null);
});

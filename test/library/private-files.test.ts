/**
 * Private by default (issue 12, item 11): what sessiondb creates (the database, its -wal and
 * -shm, the daemon's lock file, directories) is 0600 / 0700 whatever the umask allows; what
 * already exists keeps its mode.
 */
import assert from "node:assert/strict";
import { chmodSync, mkdirSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test, type TestContext } from "node:test";
import { openSessionDB } from "../../src/index.js";
import { shortTempDir, startDaemon } from "../helpers/daemon.js";
import { buildSpecFile } from "../helpers/sqlite-files.js";

function modeOf(path: string): number {
  return statSync(path).mode & 0o777;
}

/** A permissive umask (022, the usual default) for this test, restored after it; children inherit it. */
function permissiveUmask(t: TestContext): void {
  const previous = process.umask(0o022);
  t.after(() => process.umask(previous));
}

test("direct mode creates the database, its -wal and -shm 0600 and its missing directories 0700", async (t) => {
  permissiveUmask(t);
  const dir = join(shortTempDir(t), "new", "home");
  const path = join(dir, "state.db");
  const db = await openSessionDB({ path, mode: "direct" });
  t.after(() => db.close());
  await db.createSession("s", "cli");
  await db.appendMessage("s", { role: "user", content: "a secret" });
  assert.equal(modeOf(dir), 0o700);
  assert.equal(modeOf(join(dir, "..")), 0o700);
  for (const file of [path, `${path}-wal`, `${path}-shm`]) assert.equal(modeOf(file), 0o600, file);
});

test("serve creates the database, -wal, -shm and its lock file 0600 and its directory 0700", async (t) => {
  permissiveUmask(t);
  const dir = join(shortTempDir(t), "served");
  const path = join(dir, "state.db");
  const daemon = await startDaemon(t, path);
  const db = await daemon.open(t);
  await db.createSession("s", "cli");
  assert.equal(modeOf(dir), 0o700);
  for (const file of [path, `${path}-wal`, `${path}-shm`, `${path}.daemon-lock`]) assert.equal(modeOf(file), 0o600, file);
});

test("an existing database, an existing empty file and an existing directory keep their modes", async (t) => {
  permissiveUmask(t);
  const dir = join(shortTempDir(t), "shared");
  mkdirSync(dir, { mode: 0o755 });
  chmodSync(dir, 0o755);
  const existing = join(dir, "existing.db");
  buildSpecFile(existing);
  chmodSync(existing, 0o644);
  const empty = join(dir, "empty.db");
  writeFileSync(empty, "");
  chmodSync(empty, 0o640);
  for (const path of [existing, empty]) {
    const db = await openSessionDB({ path, mode: "direct" });
    await db.createSession("s", "cli");
    await db.close();
  }
  assert.equal(modeOf(dir), 0o755);
  assert.equal(modeOf(existing), 0o644);
  assert.equal(modeOf(empty), 0o640);
});

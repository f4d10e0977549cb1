/**
 * When the database file cannot be used, the error names the path and says what to do: `--db`
 * at a directory, a file this user cannot read or write, a read-only directory. Permission bits
 * do not stop root, so those cases run the CLI as the unprivileged user `nobody` (setpriv).
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { chmodSync, chownSync, existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test, type TestContext } from "node:test";
import { openSessionDB } from "../../src/index.js";
import { assertFails, runCli, ServeProcess } from "../helpers/cli.js";
import { tempDir } from "../helpers/temp-dir.js";

const NOBODY = 65534;
const isRoot = process.getuid?.() === 0;
const setprivWorks = isRoot && spawnSync("setpriv", ["--reuid=nobody", "--regid=nogroup", "--clear-groups", "true"]).status === 0;
/** Runs the CLI as an ordinary user: `nobody` when the tests run as root, else the test's own user. */
const unprivileged = isRoot ? ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"] : [];
const skipUnprivileged = isRoot && !setprivWorks ? "running as root and setpriv cannot switch to nobody here" : false;

/** A directory the unprivileged user can reach and write, holding a fresh database it owns. */
async function ownedDatabase(t: TestContext): Promise<{ dir: string; db: string }> {
  const dir = join(tempDir(t), "data");
  mkdirSync(dir);
  const db = join(dir, "state.db");
  const store = await openSessionDB({ path: db, mode: "direct" });
  await store.createSession("s1", "cli");
  await store.close();
  if (isRoot) {
    chmodSync(join(dir, ".."), 0o755);
    for (const name of readdirSync(dir)) chownSync(join(dir, name), NOBODY, NOBODY);
    chownSync(dir, NOBODY, NOBODY);
  }
  return { dir, db };
}

test("--db at a directory: every command names it and says to give the file inside", async (t) => {
  const dir = tempDir(t);
  for (const args of [["list"], ["stats"], ["import", "-"]]) {
    const result = await runCli(dir, args);
    assertFails(result, 1, `error INVALID_ARGUMENT: ${dir} is a directory, not a database file: sessiondb opens only regular files; give the file, e.g. ${join(dir, "state.db")}`);
  }
  const serve = await runCli(dir, ["serve"]);
  assertFails(serve, 1, `error INVALID_ARGUMENT: ${dir} is a directory`);
  assert.deepEqual(readdirSync(dir), [], "serve created nothing beside it either");
});

test("a file this user cannot read: the error names it and the fix", { skip: skipUnprivileged }, async (t) => {
  const { db } = await ownedDatabase(t);
  chmodSync(db, 0o000);
  const result = await runCli(db, ["list"], { wrapper: unprivileged });
  assertFails(result, 1, `error IO: cannot read ${db}: permission denied`);
  assert.match(result.stderr, /chmod u\+rw|run sessiondb as its owner/);
});

test("a file this user cannot write: the error names it and the fix", { skip: skipUnprivileged }, async (t) => {
  const { db } = await ownedDatabase(t);
  chmodSync(db, 0o444);
  const result = await runCli(db, ["list"], { wrapper: unprivileged });
  assertFails(result, 1, `error IO: cannot write ${db}: permission denied`);
  assert.match(result.stderr, /chmod u\+w/);
});

test("a read-only directory: the error names the directory, the file, and the -wal/-shm files SQLite needs", { skip: skipUnprivileged }, async (t) => {
  const { dir, db } = await ownedDatabase(t);
  chmodSync(dir, 0o555);
  const existing = await runCli(db, ["list"], { wrapper: unprivileged });
  assertFails(existing, 1, `error IO: cannot use ${db}: its directory ${dir} is read-only`);
  assert.match(existing.stderr, /state\.db-wal and state\.db-shm .*make the directory writable/);
  const fresh = join(dir, "new.db");
  const created = await runCli(fresh, ["import", "-"], { wrapper: unprivileged });
  assertFails(created, 1, `error IO: cannot create ${fresh}: its directory ${dir} is read-only`);
  assert.equal(existsSync(fresh), false);
});

test("an import line too large for the daemon's frames says to use --direct", async (t) => {
  const db = join(tempDir(t), "state.db");
  const store = await openSessionDB({ path: db, mode: "direct" });
  await store.close();
  const daemon = await ServeProcess.start(db);
  t.after(() => daemon.stop());
  const message = (n: number) => ({
    id: n, session_id: "big", role: "user", content: "x".repeat(6 * 1024 * 1024), tool_call_id: null, tool_calls: null,
    tool_name: null, timestamp: n, token_count: null, finish_reason: null, reasoning: null, reasoning_details: null,
    codex_reasoning_items: null,
  });
  const session = {
    id: "big", source: "cli", started_at: 1, ended_at: null, message_count: 3, tool_call_count: 0, title: null,
    parent_session_id: null, messages: [message(1), message(2), message(3)],
  };
  const file = join(db, "..", "big.jsonl");
  writeFileSync(file, `${JSON.stringify(session)}\n`);
  const result = await runCli(db, ["import", file]);
  assertFails(result, 1, "error ");
  assert.match(result.stderr, /line 1: .*imports with --direct/);
});

/**
 * Files that are not ours to write (issue 12, items 7 and 8): another program's file, an empty
 * file given to a read command, and a file a newer Hermes made are never changed by a byte.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test, type TestContext } from "node:test";
import Database from "better-sqlite3";
import { openSessionDB, SessionDBError, type OpenOptions } from "../../src/index.js";
import { assertFails, runCli, runJson } from "../helpers/cli.js";
import { daemonStats, shortTempDir, spawnServe, startDaemon } from "../helpers/daemon.js";
import { buildSpecFile, withRaw } from "../helpers/sqlite-files.js";

function sha256(path: string): string {
  return createHash("sha256").update(readFileSync(path)).digest("hex");
}

async function openFails(options: OpenOptions, path: string): Promise<SessionDBError> {
  const err = await openSessionDB(options).then(
    async (db) => {
      await db.close();
      return assert.fail("the open should fail");
    },
    (e: unknown) => e,
  );
  assert.ok(err instanceof SessionDBError);
  assert.equal(err.code, "SCHEMA", err.message);
  assert.ok(err.message.includes(path), `the error names the file: ${err.message}`);
  return err;
}

/** Another program's SQLite file: a `notes` table, a rollback journal. */
function buildForeignFile(path: string): void {
  const db = new Database(path);
  db.exec("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT); INSERT INTO notes (body) VALUES ('mine')");
  db.close();
}

test("another program's SQLite file is refused by the CLI, the library and serve, byte for byte unchanged", async (t) => {
  const dir = shortTempDir(t);
  const path = join(dir, "other.db");
  buildForeignFile(path);
  const before = sha256(path);

  assertFails(await runCli(path, ["list"]), 1, "error SCHEMA:");
  assertFails(await runCli(path, ["--direct", "search", "mine"]), 1, "error SCHEMA:");
  assertFails(await runCli(path, ["import", "-"], { input: "" }), 1, "error SCHEMA:");
  await openFails({ path, mode: "direct" }, path);
  await openFails({ path, mode: "auto" }, path);
  const serve = await spawnServe(path).done;
  assert.notEqual(serve.code, 0, "serve refuses the file");
  assert.match(serve.stderr, /SCHEMA/);
  assert.ok(serve.stderr.includes(path), serve.stderr);

  assert.equal(sha256(path), before);
  assert.equal(existsSync(`${path}-wal`), false, "never switched to WAL");
  withRaw(path, (raw) => assert.equal(raw.pragma("journal_mode", { simple: true }), "delete"), { readonly: true });
});

test("a file that is not SQLite at all is refused and left as it is", async (t) => {
  const path = join(shortTempDir(t), "notes.txt");
  writeFileSync(path, "just some text\n");
  assertFails(await runCli(path, ["list"]), 1, "error SCHEMA:");
  await openFails({ path, mode: "direct" }, path);
  assert.equal(readFileSync(path, "utf8"), "just some text\n");
});

test("a 0-byte file: read commands and create: false refuse it untouched; import, serve and a library open initialise it", async (t) => {
  const dir = shortTempDir(t);
  const path = join(dir, "empty.db");
  writeFileSync(path, "");
  for (const args of [["list"], ["stats"], ["search", "x"], ["export"], ["show", "s1"]]) {
    assertFails(await runCli(path, args), 1, "error SCHEMA:");
  }
  await openFails({ path, mode: "direct", create: false }, path);
  assert.equal(statSync(path).size, 0, "still empty");

  const imported = join(dir, "imported.db");
  writeFileSync(imported, "");
  const line = JSON.stringify({ id: "s1", source: "cli", started_at: 1_700_000_000, messages: [] });
  const result = await runCli(imported, ["import", "-"], { input: `${line}\n` });
  assert.equal(result.code, 0, result.stderr);
  assert.equal((await runJson<unknown[]>(imported, ["list"])).length, 1);

  const served = join(dir, "served.db");
  writeFileSync(served, "");
  await startDaemon(t, served);
  assert.ok(statSync(served).size > 0, "serve initialised it");

  const db = await openSessionDB({ path, mode: "direct" });
  await db.createSession("s1", "cli");
  await db.close();
  assert.deepEqual(withRaw(path, (raw) => raw.prepare("SELECT COUNT(*) AS n FROM sessions").get()), { n: 1 });
});

/** A file a newer Hermes (schema 9) made, with one session, in WAL or rollback-journal mode. */
function buildNewerFile(path: string, journal: "wal" | "delete"): void {
  buildSpecFile(path, 9);
  withRaw(path, (raw) => {
    raw.exec("INSERT INTO sessions (id, source, started_at, message_count) VALUES ('s-new', 'cli', 1700000000, 1)");
    raw.exec("INSERT INTO messages (session_id, role, content, timestamp) VALUES ('s-new', 'user', 'from the future', 1700000001)");
    raw.pragma(`journal_mode = ${journal}`);
  });
}

function assertNewerSchemaError(err: unknown, path: string): boolean {
  assert.ok(err instanceof SessionDBError, String(err));
  assert.equal(err.code, "SCHEMA", err.message);
  assert.match(err.message, /schema version 9, newer than this sessiondb's 6/);
  assert.ok(err.message.includes(path));
  return true;
}

for (const journal of ["wal", "delete"] as const) {
  test(`a newer file (schema 9, ${journal} journal) opens read-only in direct mode: reads work, writes fail with SCHEMA, no byte changes`, async (t: TestContext) => {
    const path = join(shortTempDir(t), "future.db");
    buildNewerFile(path, journal);
    const before = sha256(path);

    const db = await openSessionDB({ path, mode: "direct" });
    t.after(() => db.close());
    assert.equal((await db.getSession("s-new"))?.source, "cli");
    assert.equal((await db.getMessages("s-new"))[0]?.content, "from the future");
    assert.equal((await db.searchMessages("future")).length, 1);
    assert.equal((await db.listSessionsRich()).length, 1);
    await assert.rejects(db.createSession("s-mine", "cli"), (e) => assertNewerSchemaError(e, path));
    await assert.rejects(db.appendMessage("s-new", { role: "user", content: "x" }), (e) => assertNewerSchemaError(e, path));
    await assert.rejects(db.clearMessages("s-new"), (e) => assertNewerSchemaError(e, path));
    await assert.rejects(db.deleteSession("s-new"), (e) => assertNewerSchemaError(e, path));
    await db.close();

    assertFails(await runCli(path, ["--direct", "title", "s-new", "x"]), 1, "error SCHEMA:");
    assert.equal((await runJson<unknown[]>(path, ["--direct", "list"])).length, 1);

    assert.equal(sha256(path), before);
    withRaw(path, (raw) => assert.equal(raw.pragma("journal_mode", { simple: true }), journal), { readonly: true });
  });

  test(`the daemon serves a newer file (schema 9, ${journal} journal) read-only and says so in hello and status`, async (t: TestContext) => {
    const path = join(shortTempDir(t), "future.db");
    buildNewerFile(path, journal);
    const before = sha256(path);

    const daemon = await startDaemon(t, path);
    assert.equal(daemon.hello.readOnly, true);
    assert.equal(daemon.hello.fileSchemaVersion, 9);
    assert.equal(daemon.hello.schemaVersion, 6);
    const db = await daemon.open(t);
    assert.equal((await db.getMessages("s-new"))[0]?.content, "from the future");
    assert.equal((await db.searchMessages("future")).length, 1);
    await assert.rejects(db.appendMessage("s-new", { role: "user", content: "x" }), (e) => assertNewerSchemaError(e, path));
    await assert.rejects(db.setSessionTitle("s-new", "t"), (e) => assertNewerSchemaError(e, path));
    const stats = await daemonStats(db);
    assert.equal(stats.readOnly, true);
    assert.equal(stats.fileSchemaVersion, 9);

    const status = await runCli(path, ["status"]);
    assert.equal(status.code, 0, status.stderr);
    assert.match(status.stdout, /read-only.*schema version 9/);
    const report = await runJson<{ daemon: { readOnly: boolean; fileSchemaVersion: number } }>(path, ["status"]);
    assert.deepEqual([report.daemon.readOnly, report.daemon.fileSchemaVersion], [true, 9]);
    await db.close();
    const finished = await daemon.stop();
    assert.equal(finished.code, 0, finished.stderr);

    assert.equal(sha256(path), before);
    withRaw(path, (raw) => assert.equal(raw.pragma("journal_mode", { simple: true }), journal), { readonly: true });
  });
}

/**
 * Never adopt another user's file (issue 23, item 4): a database (or its -wal, -shm, -journal)
 * that another user owns, or that group or others may write, is never initialised or written —
 * by `serve`, `import` or direct mode, and not by root, who can write anything (the case that
 * matters: root's messages went into a 0666 file another user pre-created, and its 0666 -wal).
 * An existing one may still be read. The other user is `nobody` (uid 65534), as for the
 * PostgreSQL server the tests start; those cases need root and are skipped without it.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { chmodSync, chownSync, existsSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { openSessionDB, SessionDBError, type OpenOptions } from "../../src/index.js";
import { assertFails, runCli, runJson } from "../helpers/cli.js";
import { shortTempDir, startDaemon } from "../helpers/daemon.js";
import { serveExpectingRefusal } from "../helpers/serve-outcome.js";

const NOBODY = 65534;
const needsRoot = process.getuid?.() === 0 ? false : "needs root to give a file to another user (uid 65534)";
const LINE = `${JSON.stringify({ id: "s-root", source: "cli", started_at: 1_700_000_000, messages: [{ role: "user", content: "root's secret", timestamp: 1_700_000_001 }] })}\n`;

function sha256(path: string): string {
  return createHash("sha256").update(readFileSync(path)).digest("hex");
}

async function openRejects(options: OpenOptions, code: string, pattern: RegExp): Promise<void> {
  await assert.rejects(
    openSessionDB(options).then((db) => db.close()),
    (err: unknown) => err instanceof SessionDBError && err.code === code && pattern.test(err.message),
  );
}

/** A shared directory (1777, as /tmp) holding `name`, created empty by nobody with `mode`. */
function othersEmptyFile(dir: string, name: string, mode: number): string {
  chmodSync(dir, 0o1777);
  const path = join(dir, name);
  writeFileSync(path, "");
  chownSync(path, NOBODY, NOBODY);
  chmodSync(path, mode);
  return path;
}

test("another user's empty 0666 state.db in a shared folder: root's serve, import and library opens refuse with PERMISSION; nothing is written or created beside it", { skip: needsRoot }, async (t) => {
  const dir = shortTempDir(t);
  const path = othersEmptyFile(dir, "state.db", 0o666);
  const says = /state\.db belongs to uid 65534 \(nobody\) \(mode 0666\), not to this user \(uid 0 \(root\)\).*run sessiondb as that user/;

  const serve = await serveExpectingRefusal(t, path);
  assert.equal(serve.code, 1);
  assert.match(serve.stderr, /^error PERMISSION: cannot serve: /m);
  assert.match(serve.stderr, says);
  assertFails(await runCli(path, ["import", "-"], { input: LINE }), 1, "error PERMISSION: ");
  assertFails(await runCli(path, ["--direct", "import", "-"], { input: LINE }), 1, "error PERMISSION: ");
  await openRejects({ path, mode: "direct" }, "PERMISSION", says);
  await openRejects({ path, mode: "auto" }, "PERMISSION", says);
  // Autostart says why no daemon can serve it, rather than start one that refuses.
  await openRejects({ path, mode: "daemon", autostart: true }, "PERMISSION", says);
  await openRejects({ path, mode: "auto", autostart: true }, "PERMISSION", says);
  assertFails(await runCli(path, ["optimize"]), 1, "error PERMISSION: ");
  assertFails(await runCli(path, ["check"]), 1, "error SCHEMA: ");
  assertFails(await runCli(path, ["backup", join(dir, "copy.db")]), 1, "error SCHEMA: ");

  assert.equal(statSync(path).size, 0, "never initialised");
  assert.deepEqual(readdirSync(dir), ["state.db"], "no -wal, -shm, -journal, lock or socket beside it");
});

test("another user's Hermes database: root reads it (CLI and library), every write fails with PERMISSION, serve refuses, the file is unchanged", { skip: needsRoot }, async (t) => {
  const dir = shortTempDir(t);
  const path = join(dir, "state.db");
  assert.equal((await runCli(path, ["import", "-"], { input: LINE })).code, 0);
  chownSync(path, NOBODY, NOBODY);
  chmodSync(path, 0o644);
  const before = sha256(path);

  assert.deepEqual((await runJson<Array<{ id: string }>>(path, ["list"])).map((s) => s.id), ["s-root"]);
  assert.equal((await runJson<unknown[]>(path, ["--direct", "search", "secret"])).length, 1);
  assertFails(await runCli(path, ["title", "s-root", "mine now"]), 1, "error PERMISSION: setSessionTitle refused: ");
  assertFails(await runCli(path, ["import", "-"], { input: LINE.replace("s-root", "s-two") }), 1, "error PERMISSION: ");
  assertFails(await runCli(path, ["optimize"]), 1, "error PERMISSION: ");
  const serve = await serveExpectingRefusal(t, path);
  assert.equal(serve.code, 1);
  assert.match(serve.stderr, /^error PERMISSION: cannot serve: .*belongs to uid 65534 \(nobody\) \(mode 0644\)/m);

  // Auto mode with autostart starts no daemon for it and reads it directly.
  const auto = await openSessionDB({ path, mode: "auto", autostart: true });
  assert.equal(auto.mode, "direct");
  assert.equal((await auto.getSession("s-root"))?.source, "cli");
  await auto.close();
  const db = await openSessionDB({ path, mode: "direct" });
  t.after(() => db.close());
  assert.equal((await db.getMessages("s-root"))[0]?.content, "root's secret");
  await assert.rejects(db.createSession("s-new", "cli"), (e: unknown) => e instanceof SessionDBError && e.code === "PERMISSION" && e.message.includes(path));
  await assert.rejects(db.appendMessage("s-root", { role: "user", content: "x" }), { code: "PERMISSION" });
  await db.close();

  assert.equal(sha256(path), before, "not a byte of it changed");
  assert.equal(statSync(path).uid, NOBODY);
});

test("my database with another user's -wal beside it: serve and direct writes refuse naming the -wal", { skip: needsRoot }, async (t) => {
  const dir = shortTempDir(t);
  const path = join(dir, "state.db");
  assert.equal((await runCli(path, ["import", "-"], { input: LINE })).code, 0);
  const wal = othersEmptyFile(dir, "state.db-wal", 0o666);
  const serve = await serveExpectingRefusal(t, path);
  assert.equal(serve.code, 1);
  assert.match(serve.stderr, /^error PERMISSION: cannot serve: .*state\.db-wal belongs to uid 65534 \(nobody\) \(mode 0666\)/m);
  assertFails(await runCli(path, ["title", "s-root", "t"]), 1, "error PERMISSION: setSessionTitle refused: ");
  assert.equal(statSync(wal).size, 0, "nothing written into it");
});

test("my own 0666 file: serve and import refuse with PERMISSION (others may write it), reads still work; after chmod 600 it is served", async (t) => {
  const dir = shortTempDir(t);
  const empty = join(dir, "open.db");
  writeFileSync(empty, "");
  chmodSync(empty, 0o666);
  const serve = await serveExpectingRefusal(t, empty);
  assert.equal(serve.code, 1);
  assert.match(serve.stderr, /^error PERMISSION: cannot serve: .*open\.db is writable by every user \(mode 0666\).*chmod 600/m);
  assertFails(await runCli(empty, ["import", "-"], { input: LINE }), 1, "error PERMISSION: ");
  await openRejects({ path: empty, mode: "direct" }, "PERMISSION", /writable by every user/);
  assert.equal(statSync(empty).size, 0);

  const full = join(dir, "group.db");
  assert.equal((await runCli(full, ["import", "-"], { input: LINE })).code, 0);
  chmodSync(full, 0o664);
  assert.equal((await runJson<unknown[]>(full, ["list"])).length, 1, "still readable");
  assertFails(await runCli(full, ["title", "s-root", "t"]), 1, "error PERMISSION: setSessionTitle refused: ");
  assertFails(await runCli(full, ["optimize"]), 1, "error PERMISSION: ");
  assert.equal(existsSync(`${full}-wal`) && statSync(`${full}-wal`).size > 0, false, "nothing written");

  chmodSync(empty, 0o600);
  const daemon = await startDaemon(t, empty);
  const db = await daemon.open(t);
  await db.createSession("s", "cli");
  assert.ok(statSync(empty).size > 0);
});

/**
 * A client trusts only a daemon of its own user (SPEC §5). Another local user (uid 65534, run by
 * dropping root's privileges) plants a socket where a client looks for the daemon: in a shared
 * sticky directory beside the database, or a runtime directory of its own. The client refuses
 * it, naming its owner, sends it nothing, and auto mode writes the file directly; a daemon that
 * finds another user's socket at its path says so; another user's real daemon is reported as such.
 */
import assert from "node:assert/strict";
import { chmodSync, chownSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { test, type TestContext } from "node:test";
import { openSessionDB } from "../../src/index.js";
import { expectCode } from "../contract/fixture.js";
import { runCli } from "../helpers/cli.js";
import { CLI, killAndWait, shortTempDir } from "../helpers/daemon.js";
import { Child, compiledFixture } from "../helpers/processes.js";
import { rawGet } from "../helpers/raw-db.js";
import { serveExpectingRefusal } from "../helpers/serve-outcome.js";
import { serve } from "./harness.js";

const NOBODY = { uid: 65534, gid: 65534 };
const isRoot = process.getuid?.() === 0;
const NEEDS_ROOT = "needs root to run a process as another user (uid 65534)";

/** The impostor of test/fixtures/forging-daemon.ts, run as uid 65534, listening on `socketPath`. */
async function plantImpostor(t: TestContext, socketPath: string, database: string): Promise<Child> {
  const child = new Child(process.execPath, [compiledFixture("forging-daemon"), socketPath, database], { user: NOBODY });
  t.after(() => killAndWait(child));
  await child.waitForLine("ready");
  return child;
}

/** A directory anyone may create files in, like /tmp: mode 1777. */
function sharedStickyDir(t: TestContext): string {
  const dir = shortTempDir(t);
  chmodSync(dir, 0o1777);
  return dir;
}

async function seed(path: string): Promise<void> {
  const db = await openSessionDB({ path, mode: "direct" });
  await db.createSession("s", "cli");
  await db.close();
}

test("another user's socket beside the database in a shared sticky directory: refused, sent nothing, auto mode writes the file", async (t) => {
  if (!isRoot) return t.skip(NEEDS_ROOT);
  const dir = sharedStickyDir(t);
  const dbPath = join(dir, "state.db");
  await seed(dbPath);
  const impostor = await plantImpostor(t, `${dbPath}.sock`, dbPath);

  const refused = await expectCode(() => openSessionDB({ path: dbPath, mode: "daemon" }), "UNAVAILABLE");
  assert.match(refused.message, /state\.db\.sock is not a socket of this user's daemon: the socket belongs to uid 65534 \(nobody\)/);

  const auto = await openSessionDB({ path: dbPath });
  t.after(() => auto.close());
  assert.equal(auto.mode, "direct");
  const id = await auto.appendMessage("s", { role: "user", content: "a secret for the file only" });
  assert.equal(rawGet<{ content: string }>(dbPath, "SELECT content FROM messages WHERE id = ?", id)?.content, "a secret for the file only");

  const status = await runCli(dbPath, ["status"]);
  assert.equal(status.code, 1);
  assert.match(status.stdout, /uid 65534 \(nobody\)/);
  assert.doesNotMatch(impostor.stdout, /request/, "the client sent requests to another user's socket");
});

test("a socket of ours in a directory others may write (not sticky): refused, since anyone could swap it", async (t) => {
  const dir = shortTempDir(t);
  const open = join(dir, "open");
  mkdirSync(open);
  chmodSync(open, 0o777);
  const dbPath = join(dir, "state.db");
  const daemon = await serve(t, dbPath, { readers: 1, socketPath: join(open, "d.sock") });
  const refused = await expectCode(() => openSessionDB({ path: dbPath, mode: "daemon", socketPath: daemon.socketPath }), "UNAVAILABLE");
  assert.match(refused.message, /writable by other users and not sticky \(mode 777\): anyone could replace the socket/);
});

test("a runtime directory planted by another user: clients refuse its socket and direct mode still works", async (t) => {
  if (!isRoot) return t.skip(NEEDS_ROOT);
  const base = shortTempDir(t);
  chmodSync(base, 0o755);
  const deep = join(base, "d".repeat(60), "e".repeat(60));
  mkdirSync(deep, { recursive: true });
  const dbPath = join(deep, "state.db");
  await seed(dbPath);
  const planted = join(base, "planted");
  mkdirSync(join(planted, "sessiondb"), { recursive: true });
  chownSync(join(planted, "sessiondb"), NOBODY.uid, NOBODY.gid);
  chmodSync(join(planted, "sessiondb"), 0o777);
  const env = { XDG_RUNTIME_DIR: planted };

  const listed = await runCli(dbPath, ["--json", "list"], { env });
  assert.equal(listed.code, 0, listed.stderr);
  assert.deepEqual((JSON.parse(listed.stdout) as Array<{ id: string }>).map((s) => s.id), ["s"]);
  const status = await runCli(dbPath, ["status"], { env });
  assert.equal(status.code, 1);
  assert.match(status.stdout, /belongs to uid 65534 \(nobody\)/);
});

test("serve finds another user's live socket at its socket path: it says so (not INTERNAL: EADDRINUSE) and leaves it", async (t) => {
  if (!isRoot) return t.skip(NEEDS_ROOT);
  const dir = sharedStickyDir(t);
  const dbPath = join(dir, "state.db");
  const impostor = await plantImpostor(t, `${dbPath}.sock`, dbPath);
  const result = await serveExpectingRefusal(t, dbPath);
  assert.equal(result.code, 1);
  assert.match(result.stderr, /^error UNAVAILABLE: refusing to start: .*state\.db\.sock is a socket of uid 65534 \(nobody\), not of this user/m);
  assert.doesNotMatch(result.stderr, /INTERNAL|EADDRINUSE/);
  assert.equal(impostor.stdout, "ready\n", "serve talked to or removed another user's socket");
});

test("a daemon another user runs is reported as such by status and by a second serve, not as none answering", async (t) => {
  if (!isRoot) return t.skip(NEEDS_ROOT);
  const dir = shortTempDir(t);
  chmodSync(dir, 0o755);
  const dbPath = join(dir, "state.db");
  const daemon = await serve(t, dbPath, { readers: 1 });

  const status = await runCliAs(dbPath, ["status"]);
  assert.equal(status.code, 1);
  assert.match(status.stdout, /uid 0 \(root\)/);
  assert.match(status.stdout, /EACCES/);
  const second = await serveExpectingRefusal(t, dbPath, [], NOBODY);
  assert.equal(second.code, 1);
  assert.match(second.stderr, /^error UNAVAILABLE: .*state\.db\.daemon-lock: it belongs to uid 0 \(root\), whose daemon serves/m);
  assert.equal(await (await daemon.open(t)).getSession("none"), null, "the daemon kept serving its own user");
});

/** `sessiondb --db <db> ...args` run as uid 65534. */
async function runCliAs(db: string, args: readonly string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = new Child(process.execPath, [CLI, "--db", db, ...args], { user: NOBODY, env: { ...process.env, XDG_RUNTIME_DIR: "" } });
  return child.done;
}

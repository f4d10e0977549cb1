/**
 * Only regular files (issue 23, item 5): a FIFO, a device, a socket or a directory given as the
 * database fails at once with INVALID_ARGUMENT naming what it is — in every command and mode —
 * and nothing is created beside it (serve and import used to leave /dev/null-journal and
 * /dev/null.daemon-lock behind).
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, statSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { test, type TestContext } from "node:test";
import { openSessionDB, SessionDBError, type OpenOptions } from "../../src/index.js";
import { assertFails, runCli } from "../helpers/cli.js";
import { shortTempDir } from "../helpers/daemon.js";
import { serveExpectingRefusal } from "../helpers/serve-outcome.js";

const BESIDE = ["-journal", "-wal", "-shm", ".daemon-lock", ".daemon-lock-journal", ".sock", ".daemon.log", ".autostart-lock"];
const LINE = `${JSON.stringify({ id: "s1", source: "cli", started_at: 1_700_000_000, messages: [] })}\n`;

/** What is beside `path` now, of the names sessiondb would create. */
function sideFiles(path: string): string[] {
  return BESIDE.map((suffix) => `${path}${suffix}`).filter((file) => existsSync(file));
}

async function refusedEverywhere(t: TestContext, path: string, kind: string, commands: ReadonlyArray<readonly string[]>): Promise<void> {
  const before = sideFiles(path);
  const says = `${path} is ${kind}, not a database file`;
  for (const args of commands) {
    const result = await runCli(path, args, { input: LINE });
    assertFails(result, 1, `error INVALID_ARGUMENT: ${says}`);
  }
  const serve = await serveExpectingRefusal(t, path);
  assert.equal(serve.code, 1);
  assert.ok(serve.stderr.includes(`error INVALID_ARGUMENT: ${says}`), serve.stderr);
  for (const options of [{ mode: "direct" }, { mode: "auto" }, { mode: "daemon" }, { mode: "auto", autostart: true }] as OpenOptions[]) {
    await assert.rejects(
      openSessionDB({ ...options, path }).then((db) => db.close()),
      (err: unknown) => err instanceof SessionDBError && err.code === "INVALID_ARGUMENT" && err.message.startsWith(says),
      JSON.stringify(options),
    );
  }
  assert.deepEqual(sideFiles(path), before, "nothing created beside it");
}

test("/dev/null and /dev/zero: every command, serve and every library mode refuse with INVALID_ARGUMENT; nothing appears in /dev", async (t) => {
  await refusedEverywhere(t, "/dev/null", "a character device", [["list"], ["import", "-"], ["--direct", "import", "-"], ["stats"], ["status"]]);
  await refusedEverywhere(t, "/dev/zero", "a character device", [["list"], ["import", "-"]]);
  assertFails(await runCli("/tmp/unused.db", ["verify", "/dev/zero"]), 1, "error INVALID_ARGUMENT: /dev/zero is a character device, not a database file");
});

test("a FIFO: refused at once (never opened, so nothing blocks on it), nothing created beside it", { skip: spawnSync("mkfifo", ["--version"]).status !== 0 ? "no mkfifo" : false }, async (t) => {
  const dir = shortTempDir(t);
  const fifo = join(dir, "state.db");
  assert.equal(spawnSync("mkfifo", [fifo]).status, 0);
  await refusedEverywhere(t, fifo, "a FIFO (named pipe)", [["list"], ["import", "-"], ["show", "s1"], ["export"]]);
  assert.deepEqual(readdirSync(dir), ["state.db"]);
});

test("a socket and a directory: refused naming what they are, nothing created beside them", async (t) => {
  const dir = shortTempDir(t);
  const socket = join(dir, "state.db");
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(socket, resolve));
  t.after(() => server.close());
  await refusedEverywhere(t, socket, "a socket", [["list"], ["import", "-"]]);
  assert.deepEqual(readdirSync(dir), ["state.db"]);

  const folder = join(dir, "folder");
  mkdirSync(folder);
  await refusedEverywhere(t, folder, "a directory", [["list"], ["import", "-"]]);
  assert.deepEqual(readdirSync(folder), []);
  assert.deepEqual(readdirSync(dir).sort(), ["folder", "state.db"]);
});

test("backup DEST and export -o FILE at a device or FIFO refuse with INVALID_ARGUMENT: renaming the new file onto it would replace the device", async (t) => {
  const dir = shortTempDir(t);
  const db = join(dir, "state.db");
  assert.equal((await runCli(db, ["import", "-"], { input: LINE })).code, 0);
  // A private twin of /dev/null (root may make one), else a FIFO: what a failing run replaces is the test's own.
  const device = join(dir, "null");
  const made = process.getuid?.() === 0 && spawnSync("mknod", ["-m", "666", device, "c", "1", "3"]).status === 0;
  if (!made) assert.equal(spawnSync("mkfifo", [device]).status, 0);
  const kind = made ? "a character device" : "a FIFO (named pipe)";
  assertFails(await runCli(db, ["backup", device]), 1, `error INVALID_ARGUMENT: ${device} is ${kind}: the backup is written beside it`);
  assertFails(await runCli(db, ["export", "-o", device]), 1, `error INVALID_ARGUMENT: ${device} is ${kind}: the export is written beside it`);
  const stat = statSync(device);
  assert.ok(made ? stat.isCharacterDevice() : stat.isFIFO(), "still what it was");
  assert.deepEqual(readdirSync(dir).filter((name) => name.includes("partial")), [], "no temporary file left");
});

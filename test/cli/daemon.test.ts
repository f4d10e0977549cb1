/**
 * `sessiondb` while `serve` runs for the file: every command through the daemon (the shared
 * suite), and `stop`.
 */
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { defaultSocketPath } from "../../src/index.js";
import { runCli, runJson, ServeProcess } from "../helpers/cli.js";
import { cliSuite } from "../helpers/cli-suite.js";
import { tempDir } from "../helpers/temp-dir.js";

cliSuite("daemon");

test("stop: the daemon finishes, removes its socket and exits 0; status then exits 1", async (t) => {
  const db = join(tempDir(t), "state.db");
  const daemon = await ServeProcess.start(db);
  t.after(() => daemon.stop());
  const socket = defaultSocketPath(db);
  assert.ok(existsSync(socket));
  assert.deepEqual(await runJson(db, ["stop"]), { stopped: true, pid: daemon.pid });
  assert.equal(existsSync(socket), false, "the socket is gone when stop returns");
  assert.equal(await daemon.exited, 0);
  const status = await runCli(db, ["status"]);
  assert.equal(status.code, 1);
  assert.equal(status.stderr, `error UNAVAILABLE: no daemon serves ${db}\n`);
});

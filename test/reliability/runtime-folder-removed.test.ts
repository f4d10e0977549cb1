/**
 * One writer per file by every name, whatever is deleted (issue 23): the runtime folder (a logout,
 * a /tmp cleaner) and the socket and lock file beside the database removed while a daemon serves
 * `a/state.db` under load, then clients open the same file by a hard link `b/hard.db`. The daemon
 * is paused meanwhile, so it cannot make its sockets again before the clients look: only the
 * guard on the file itself can tell them a daemon holds it. No client may go direct under the
 * other name (a second WAL: before, "Rowid out of order" and the second name's rows gone), no
 * second `serve` may start; once the daemon runs again it makes its sockets and lock file again
 * by itself, and every acknowledged append is in an intact file.
 */
import assert from "node:assert/strict";
import { existsSync, linkSync, mkdirSync, readdirSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { openSessionDB } from "../../src/index.js";
import { fileIdentity, identityName } from "../../src/file-identity.js";
import { shortTempDir } from "../helpers/daemon.js";
import { serveExpectingRefusal } from "../helpers/serve-outcome.js";
import { waitUntil } from "../helpers/wait-until.js";
import { checkFile, loadReport, reconcile, serve, spawnLoad } from "./harness.js";

/** How long every client appends once all run. A duration of load, not a timed assertion. */
const LOAD_MS = 3000;
/** A chance for a client that would wrongly open the file directly to do so while the daemon is paused. */
const PAUSE_MS = 500;

test("runtime folder and the files beside the database removed under a paused daemon: clients by a hard link wait for it, no second writer, nothing lost", async (t) => {
  const dir = shortTempDir(t);
  // A runtime folder of this test's own: removing the shared one would disturb every other daemon here.
  const runtime = join(dir, "run");
  const before = process.env.XDG_RUNTIME_DIR;
  process.env.XDG_RUNTIME_DIR = runtime;
  t.after(() => {
    if (before === undefined) delete process.env.XDG_RUNTIME_DIR;
    else process.env.XDG_RUNTIME_DIR = before;
  });
  mkdirSync(join(dir, "a"));
  mkdirSync(join(dir, "b"));
  const served = join(dir, "a", "state.db");
  const hard = join(dir, "b", "hard.db");
  const seed = await openSessionDB({ path: served, mode: "direct" });
  await seed.createSession("seed", "cli");
  await seed.close();
  linkSync(served, hard);
  const identitySocket = join(runtime, "sessiondb", `${identityName(fileIdentity(served)!)}.sock`);

  const daemon = await serve(t, served, { readers: 2 });
  assert.ok(existsSync(identitySocket));
  const stopFile = join(dir, "stop");
  const first = spawnLoad(t, { db: served, mode: "daemon", session: "served", tag: "served-daemon", pipeline: 8, stopFile });
  await first.waitForLine("acked");

  const pid = daemon.pid;
  process.kill(pid, "SIGSTOP");
  t.after(() => {
    try {
      process.kill(pid, "SIGCONT");
    } catch {
      // gone
    }
  });
  rmSync(join(runtime, "sessiondb"), { recursive: true, force: true });
  unlinkSync(`${served}.sock`);
  unlinkSync(`${served}.daemon-lock`);
  const clients = [
    { tag: "hard-auto", mode: "auto" as const },
    { tag: "hard-direct", mode: "direct" as const },
    { tag: "hard-daemon", mode: "daemon" as const },
  ].map((c) => ({ ...c, child: spawnLoad(t, { db: hard, mode: c.mode, session: c.tag, tag: c.tag, pipeline: 8, stopFile }) }));
  const second = serveExpectingRefusal(t, hard);
  await Promise.all(clients.map((c) => c.child.waitForLine("opening")));
  await sleep(PAUSE_MS);
  for (const c of clients) {
    assert.ok(!c.child.stdout.split("\n").includes("ready"), `${c.tag} opened the file while its daemon was paused with no socket: a second writer`);
  }
  process.kill(pid, "SIGCONT");

  // The daemon makes its sockets and lock file again by itself, with no client asking.
  await waitUntil("the daemon's identity socket, socket and lock file made again", () =>
    existsSync(identitySocket) && existsSync(`${served}.sock`) && existsSync(`${served}.daemon-lock`));
  await Promise.all(clients.map((c) => c.child.waitForLine("acked")));
  await sleep(LOAD_MS);
  writeFileSync(stopFile, "");
  const reports = await Promise.all([{ tag: "served-daemon", child: first }, ...clients].map(async (c) => ({ tag: c.tag, report: await loadReport(c.child) })));
  const refused = await second;

  assert.equal(refused.code, 1, `a second serve on the hard link started: ${refused.stderr}`);
  assert.match(refused.stderr, /^error UNAVAILABLE: (a sessiondb daemon \(pid \d+\) already serves .*hard\.db under another name|another sessiondb daemon holds .*hard\.db)/m);
  for (const { tag, report } of reports) {
    assert.deepEqual(report.failureCodes, {}, `${tag} had failures: ${JSON.stringify(report.failed.slice(0, 3))}`);
    assert.ok(report.ackCount > 0, `${tag} wrote nothing`);
  }
  assert.equal(reports.find((r) => r.tag === "hard-auto")?.report.opened, "daemon", "auto mode through the hard link did not find the daemon");
  assert.equal(existsSync(`${hard}-wal`), false, "something wrote the file under the hard link's name (a second WAL)");
  assert.deepEqual(readdirSync(join(dir, "b")).sort(), ["hard.db"], "nothing was made beside the hard link");

  const stopped = await daemon.stop();
  assert.equal(stopped.code, 0, stopped.stderr);
  assert.match(stopped.stderr, /state\.db\.sock was removed: made it again/);
  assert.match(stopped.stderr, /inode-\d+-\d+\.sock was removed: made it again/);
  assert.match(stopped.stderr, /state\.db\.daemon-lock was removed: made it again/);
  const file = checkFile(served);
  assert.equal(file.integrity, "ok");
  assert.equal(file.ftsIntegrity, "ok");
  assert.deepEqual(file.counterMismatches, []);
  const reconciled = reconcile(served, reports, []);
  assert.deepEqual(reconciled.problems.slice(0, 10), []);
  t.diagnostic(`acknowledged appends, all present: ${reports.map(({ tag, report }) => `${tag} ${report.ackCount}`).join(", ")}`);
});

/**
 * One file, one writer, whatever its name (SPEC §1, §5): with a daemon serving a file, clients in
 * every mode open it through a hard link while a second `serve` is tried on the link. SQLite keeps
 * the WAL and its index beside each name, so a second writer under another name corrupts the file
 * and loses acknowledged writes; here the daemon is found by the file's identity and direct mode
 * writes under the daemon's name.
 */
import assert from "node:assert/strict";
import { linkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { openSessionDB } from "../../src/index.js";
import { shortTempDir } from "../helpers/daemon.js";
import { serveExpectingRefusal } from "../helpers/serve-outcome.js";
import { checkFile, loadReport, reconcile, serve, spawnLoad } from "./harness.js";

/** How long every client appends at once. A duration of load, not a timed assertion. */
const LOAD_MS = 3000;

test("two names for one file, a daemon on one: appends in every mode through the other and a second serve lose nothing", async (t) => {
  const dir = shortTempDir(t);
  const served = join(dir, "state.db");
  const alias = join(dir, "alias.db");
  const seed = await openSessionDB({ path: served, mode: "direct" });
  await seed.createSession("seed", "cli");
  await seed.close();
  linkSync(served, alias);

  const daemon = await serve(t, served, { readers: 2 });
  const stopFile = join(dir, "stop");
  const clients = [
    { tag: "served-daemon", db: served, mode: "daemon" as const },
    { tag: "alias-auto", db: alias, mode: "auto" as const },
    { tag: "alias-daemon", db: alias, mode: "daemon" as const },
    { tag: "alias-direct", db: alias, mode: "direct" as const },
  ].map((c) => ({ ...c, child: spawnLoad(t, { db: c.db, mode: c.mode, session: c.tag, tag: c.tag, pipeline: 8, stopFile }) }));
  await Promise.all(clients.map((c) => c.child.waitForLine("ready")));

  const second = await serveExpectingRefusal(t, alias);
  // Every client has written something before the load runs its course.
  await Promise.all(clients.map((c) => c.child.waitForLine("acked")));
  await sleep(LOAD_MS);
  writeFileSync(stopFile, "");
  const reports = await Promise.all(clients.map(async (c) => ({ ...c, report: await loadReport(c.child) })));

  assert.equal(second.code, 1);
  assert.match(second.stderr, new RegExp(`^error UNAVAILABLE: a sessiondb daemon \\(pid ${daemon.pid}\\) already serves .*alias\\.db under another name, .*state\\.db`, "m"));
  for (const { tag, report } of reports) {
    assert.deepEqual(report.failureCodes, {}, `${tag} had failures: ${JSON.stringify(report.failed.slice(0, 3))}`);
    assert.ok(report.ackCount > 0, `${tag} wrote nothing`);
  }
  assert.equal(reports.find((r) => r.tag === "alias-auto")?.report.opened, "daemon", "auto mode through the link did not find the daemon");

  const stopped = await daemon.stop();
  assert.equal(stopped.code, 0, stopped.stderr);
  const file = checkFile(served);
  assert.equal(file.integrity, "ok");
  assert.equal(file.ftsIntegrity, "ok");
  assert.deepEqual(file.counterMismatches, []);
  const reconciled = reconcile(served, reports.map(({ tag, report }) => ({ tag, report })), []);
  assert.deepEqual(reconciled.problems.slice(0, 10), []);
  t.diagnostic(`acknowledged appends, all present: ${reports.map(({ tag, report }) => `${tag} ${report.ackCount}`).join(", ")}`);
});

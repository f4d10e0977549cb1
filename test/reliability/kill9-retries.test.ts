/**
 * Exactly once under `kill -9` (issue 25): the daemon is killed again and again (every other
 * time stopped with SIGTERM instead), and started again each time, while client processes pipeline appends with the client's automatic
 * idempotency keys. Mode "daemon" clients reconnect and send each write in flight again with its
 * key; mode "auto" clients fail over to direct mode and send them there. No call fails, and
 * every logical append is in the file exactly once, with the id its call was answered. No
 * assertion depends on the machine's speed: the kills come after progress, not after a time,
 * and the writers write until told to stop after the last restart (a fixed count could be
 * done before the first kill on a quick machine).
 */
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { shortTempDir } from "../helpers/daemon.js";
import { rawGet } from "../helpers/raw-db.js";
import { waitUntil } from "../helpers/wait-until.js";
import { checkFile, loadReport, randomBetween, reconcile, scaled, serve, spawnLoad } from "./harness.js";

const KILLS = scaled(3, 6);
const PIPELINE = 8;

function messages(dbPath: string): number {
  return rawGet<{ n: number }>(dbPath, "SELECT count(*) AS n FROM messages")?.n ?? 0;
}

test(`kill -9 (or SIGTERM) of the daemon ${KILLS} times under writers that resend with their keys: every append once, no call failed`, async (t) => {
  const dir = shortTempDir(t);
  const dbPath = join(dir, "state.db");
  const stopFile = join(dir, "stop");
  let daemon = await serve(t, dbPath, { readers: 2 });
  const clients = (["daemon", "daemon", "auto"] as const).map((mode, i) => {
    const tag = `k${i}${mode[0]}`;
    const child = spawnLoad(t, { db: dbPath, mode, session: `${mode}-${i}`, tag, pipeline: PIPELINE, stopFile, untilRecovered: true, requestTimeoutMs: 120_000 });
    return { tag, mode, child };
  });
  await Promise.all(clients.map((c) => c.child.waitForLine("acked")));

  for (let kill = 0; kill < KILLS; kill++) {
    // Some progress since the last restart, then a random moment later: writes are in flight.
    const before = messages(dbPath);
    await waitUntil("the writers made progress on this daemon", () => messages(dbPath) >= before + 10);
    await sleep(randomBetween(0, 200));
    // Every other restart is a clean one: SIGTERM stops reading, answers what it read, exits 0.
    if (kill % 2 === 0) assert.equal((await daemon.kill9()).signal, "SIGKILL");
    else assert.equal((await daemon.stop()).code, 0);
    daemon = await serve(t, dbPath, { readers: 2 });
  }
  const afterLast = messages(dbPath);
  await waitUntil("the writers made progress after the last restart", () => messages(dbPath) >= afterLast + 10);
  writeFileSync(stopFile, "");

  const everyone = [];
  for (const client of clients) {
    const report = await loadReport(client.child, 600_000);
    everyone.push({ tag: client.tag, report });
    assert.deepEqual(report.failed.slice(0, 3), [], `${client.tag} (${client.mode}): no call failed (${JSON.stringify(report.failureCodes)})`);
    assert.equal(report.ackCount, report.sent, `${client.tag}: every call answered`);
    if (client.mode === "auto") assert.equal(report.endedIn, "direct", `${client.tag} failed over at the first kill`);
  }
  const reconciled = reconcile(dbPath, everyone, []);
  assert.deepEqual(reconciled.problems, [], "every append there once, with the id it was answered");
  const sent = everyone.reduce((sum, { report }) => sum + report.sent, 0);
  assert.equal(reconciled.acked, sent);
  assert.equal(messages(dbPath), sent, "no append twice, none extra");
  const finished = await daemon.stop();
  assert.equal(finished.code, 0, finished.stderr);
  const check = checkFile(dbPath);
  assert.equal(check.integrity, "ok");
  assert.deepEqual(check.counterMismatches, []);
  t.diagnostic(`kill -9 / SIGTERM x${KILLS}: ${reconciled.acked} appends from ${clients.length} writers, each once; no call failed`);
});

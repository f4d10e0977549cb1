/**
 * SIGTERM while client processes pipeline writes (SPEC §5): the daemon stops reading, commits
 * and answers every write it had read, checkpoints, removes its socket and exits 0. A write a
 * client was not answered for was never applied.
 */
import assert from "node:assert/strict";
import { existsSync, statSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { shortTempDir } from "../helpers/daemon.js";
import type { LoadReport } from "./fixtures/load-client.js";
import { checkFile, loadReport, randomBetween, reconcile, scaled, serve, spawnLoad } from "./harness.js";

const ROUNDS = scaled(3, 6);
const CLIENTS = 3;
const PIPELINE = 64;

test(`SIGTERM under pipelined load (${ROUNDS} rounds): every write read is committed and answered before exit`, async (t) => {
  const dbPath = join(shortTempDir(t), "state.db");
  const everyone: Array<{ tag: string; report: LoadReport }> = [];
  let refused = 0;
  for (let round = 0; round < ROUNDS; round++) {
    const daemon = await serve(t, dbPath, { readers: 2 });
    const tags = Array.from({ length: CLIENTS }, (_, i) => `t${round}c${i}`);
    const children = tags.map((tag) =>
      // Without keys: a write the daemon did not read fails (kill9-retries.test.ts restarts it under keyed writers).
      spawnLoad(t, { db: dbPath, mode: "daemon", session: tag, tag, pipeline: PIPELINE, stopOnError: true, idempotencyKeys: false }),
    );
    // Stopped once every client has had a write acknowledged, a random moment later.
    await Promise.all(children.map((c) => c.waitForLine("acked")));
    await sleep(randomBetween(100, 500));
    const finished = await daemon.stop();
    assert.equal(finished.code, 0, `the daemon exited with ${finished.code ?? finished.signal}: ${finished.stderr}`);
    assert.equal(existsSync(daemon.socketPath), false, "the socket file was left behind");
    assert.equal(statSync(`${dbPath}-wal`, { throwIfNoEntry: false })?.size ?? 0, 0, "the WAL was not checkpointed");

    for (const [i, child] of children.entries()) {
      const report = await loadReport(child);
      assert.ok(report.ackCount > 0);
      assert.ok(Object.keys(report.failureCodes).every((c) => c === "UNAVAILABLE"), JSON.stringify(report.failureCodes));
      refused += report.failed.length;
      everyone.push({ tag: tags[i]!, report });
    }
    // A write that got no answer (or "shutting down") was not applied.
    const reconciled = reconcile(dbPath, everyone, ["UNAVAILABLE"]);
    assert.deepEqual(reconciled.problems, [], `round ${round}`);
  }
  const check = checkFile(dbPath);
  assert.equal(check.integrity, "ok");
  assert.deepEqual(check.counterMismatches, []);
  const acked = everyone.reduce((n, c) => n + c.report.ackCount, 0);
  t.diagnostic(`SIGTERM x${ROUNDS}: ${acked} writes acknowledged and present; ${refused} unanswered or refused while stopping, none applied; exit 0, WAL 0 bytes, socket removed`);
});

/**
 * The WAL stays bounded (SPEC §5: the daemon owns checkpointing) under a flat-out writer and
 * readers looping slow searches. Without the daemon's checkpoint control such a load took the
 * `-wal` file past 300 MB in 4 s; with it the file stays under the documented bound, the
 * configured limit (default 64 MiB) plus what one check interval of writing adds.
 */
import assert from "node:assert/strict";
import { statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { daemonStats, freshDbPath } from "../helpers/daemon.js";
import { checkFile, loadReport, mib, scaled, serve, spawnLoad } from "./harness.js";

const SOAK_MS = scaled(10_000, 30_000);
const WAL_LIMIT_MB = 64;
/** The documented bound: the limit, plus slack for the writes of a check interval and a checkpoint's wait for readers. */
const WAL_BOUND = (WAL_LIMIT_MB + 32) * 1024 * 1024;

test(`the WAL stays under ${WAL_BOUND / 1048576} MiB through ${SOAK_MS / 1000} s of flat-out writes and slow searches`, async (t) => {
  const dbPath = freshDbPath(t);
  const daemon = await serve(t, dbPath, { readers: 2, walLimitMb: WAL_LIMIT_MB });
  const db = await daemon.open(t);
  const stopFile = join(dirname(dbPath), "stop");
  const writers = [0, 1].map((i) =>
    spawnLoad(t, { db: dbPath, mode: "daemon", session: `w${i}`, tag: `w${i}`, pipeline: 64, contentBytes: 4096, stopFile, durationMs: SOAK_MS + 60_000, report: "counts" }),
  );
  // "loadword" is in every message: each search ranks every row, slower as the file grows.
  const readers = [0, 1].map((i) =>
    spawnLoad(t, { db: dbPath, mode: "daemon", op: "search", query: "loadword", session: "-", tag: `r${i}`, pipeline: 2, stopFile, durationMs: SOAK_MS + 60_000, report: "counts" }),
  );
  await Promise.all([...writers, ...readers].map((c) => c.waitForLine("ready")));

  let maxWal = 0;
  let samples = 0;
  const until = Date.now() + SOAK_MS;
  while (Date.now() < until) {
    maxWal = Math.max(maxWal, statSync(`${dbPath}-wal`, { throwIfNoEntry: false })?.size ?? 0);
    samples++;
    await sleep(20);
  }
  writeFileSync(stopFile, "");
  const written = await Promise.all(writers.map((c) => loadReport(c)));
  const searched = await Promise.all(readers.map((c) => loadReport(c)));
  const stats = await daemonStats(db);

  for (const r of [...written, ...searched]) assert.deepEqual(r.failureCodes, {});
  const writes = written.reduce((n, r) => n + r.ackCount, 0);
  const searches = searched.reduce((n, r) => n + r.ackCount, 0);
  assert.ok(searches > 0 && writes > 0);
  assert.ok(maxWal < WAL_BOUND, `the WAL reached ${mib(maxWal)}`);
  const stopped = await daemon.stop();
  assert.equal(stopped.code, 0, stopped.stderr);
  const check = checkFile(dbPath);
  assert.equal(check.integrity, "ok");
  assert.equal(check.messages, writes);
  t.diagnostic(
    `WAL soak ${SOAK_MS / 1000} s: max WAL ${mib(maxWal)} over ${samples} samples (limit ${WAL_LIMIT_MB} MiB); ${writes} writes of 4 KiB ` +
      `(${mib(writes * 4096)}), ${searches} searches over every row; ${stats.writer.checkpoints.truncate} TRUNCATE checkpoints; ` +
      `database ${mib(statSync(dbPath).size)}`,
  );
});

/**
 * How long an fsync takes where the run's files live. With synchronous=FULL every commit waits
 * for one, so it bounds what any mode can do, and its tail shows in every p99 and max.
 */
import { closeSync, fsyncSync, openSync, rmSync, writeSync } from "node:fs";
import { join } from "node:path";
import { summarizeLatencies, type LatencySummary } from "./stats.js";

const SYNCS = 200;
/** About what a small commit writes to the WAL: a few pages. */
const WRITE_BYTES = 4 * 4096;

export function probeFsync(dir: string): LatencySummary {
  const path = join(dir, "fsync-probe.bin");
  const fd = openSync(path, "w");
  const block = Buffer.alloc(WRITE_BYTES, 0x5a);
  const samples: number[] = [];
  try {
    for (let i = 0; i < SYNCS; i++) {
      writeSync(fd, block, 0, block.length, (i % 64) * block.length);
      const t0 = performance.now();
      fsyncSync(fd);
      samples.push(performance.now() - t0);
    }
  } finally {
    closeSync(fd);
    rmSync(path, { force: true });
  }
  return summarizeLatencies(samples);
}

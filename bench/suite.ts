/** The whole suite in order: the convoy matrix, the read side, the WAL growth check. */
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { BenchResult, IdleOnlyResult, ResolvedBenchOptions } from "./bench-result.js";
import { ensureCorpus } from "./corpus.js";
import { buildFsyncDelayLibrary } from "./fsync-delay.js";
import { probeFsync } from "./fsync-probe.js";
import { runConvoy } from "./convoy.js";
import { undoOnInterrupt } from "./interrupt.js";
import { describeMachine } from "./machine.js";
import { writeMessagePool } from "./message-pool.js";
import { runReadSide, slowestSearch } from "./read-side.js";
import { checkTargets } from "./targets.js";
import { runWalGrowth } from "./wal-growth.js";
import { runIdleFootprint, type IdleFootprintOptions } from "./idle-footprint.js";

function idleOptions(options: ResolvedBenchOptions, workDir: string, socketDir: string): IdleFootprintOptions {
  return {
    workDir,
    socketDir,
    settleSeconds: options.idleSettleSeconds,
    windowSeconds: options.idleWindowSeconds,
    soakSeconds: options.soakSeconds,
    coldReads: options.coldReads,
  };
}

/** `--idle-only`: the idle footprint alone (quick: a one-minute soak; `--full`: an hour). */
export async function runIdleOnly(options: ResolvedBenchOptions, log: (line: string) => void): Promise<IdleOnlyResult> {
  const startedAt = new Date().toISOString();
  const machine = describeMachine();
  const workDir = options.workDir ?? mkdtempSync(join(tmpdir(), "sdb-bench-"));
  mkdirSync(workDir, { recursive: true });
  const socketDir = mkdtempSync(join(tmpdir(), "sdbb-"));
  const removeDirs = () => {
    if (options.workDir === null) rmSync(workDir, { recursive: true, force: true });
    rmSync(socketDir, { recursive: true, force: true });
  };
  const forget = undoOnInterrupt(removeDirs);
  try {
    return { startedAt, machine, options, idle: await runIdleFootprint(idleOptions(options, workDir, socketDir), log) };
  } finally {
    forget();
    removeDirs();
  }
}

export async function runSuite(options: ResolvedBenchOptions, log: (line: string) => void): Promise<BenchResult> {
  const startedAt = new Date().toISOString();
  const machine = describeMachine();
  const t0 = performance.now();
  const workDir = options.workDir ?? mkdtempSync(join(tmpdir(), "sdb-bench-"));
  mkdirSync(workDir, { recursive: true });
  // Socket paths must stay under ~107 bytes, whatever the work directory.
  const socketDir = mkdtempSync(join(tmpdir(), "sdbb-"));
  const removeDirs = () => {
    if (options.workDir === null) rmSync(workDir, { recursive: true, force: true });
    rmSync(socketDir, { recursive: true, force: true });
  };
  const forget = undoOnInterrupt(removeDirs);
  try {
    const fsyncBefore = probeFsync(workDir);
    log(`fsync in ${workDir}: p50 ${fsyncBefore.p50.toFixed(2)} ms, p99 ${fsyncBefore.p99.toFixed(2)} ms, max ${fsyncBefore.max.toFixed(2)} ms`);
    const messagesFile = join(workDir, "messages.json");
    const messageChars = writeMessagePool(messagesFile, options.seed);
    const shared = { workDir, socketDir, synchronous: options.synchronous, walLimitMb: options.walLimitMb, messagesFile };
    const fsyncLibrary = options.fsyncDelaysMs.some((ms) => ms > 0) ? buildFsyncDelayLibrary(options.cacheDir) : null;
    const convoy = await runConvoy(
      { ...shared, ks: options.ks, reps: options.reps, seconds: options.seconds, warmupCalls: options.warmupCalls, modes: options.modes, fsyncDelaysMs: options.fsyncDelaysMs, fsyncLibrary },
      log,
    );
    const read =
      options.messages.length === 0
        ? null
        : await runReadSide({ ...shared, sizes: options.messages, seed: options.seed, cacheDir: options.cacheDir, opSeconds: options.readSeconds, warmupSeconds: options.readWarmupSeconds }, log);
    const slowest = read === null ? null : slowestSearch(read);
    const wal =
      slowest === null
        ? null
        : await runWalGrowth(
            {
              ...shared,
              walLimitMb: options.walCheckLimitMb,
              corpus: ensureCorpus(options.messages[0]!, options.seed, options.cacheDir),
              op: slowest.op,
              query: slowest.query,
              seconds: options.walSeconds,
            },
            log,
          );
    // Last, on a machine the other runs have left: its wake-ups are counted.
    const idle = options.idleWindowSeconds === 0 ? null : await runIdleFootprint(idleOptions(options, workDir, socketDir), log);
    return {
      format: 1,
      startedAt,
      durationS: (performance.now() - t0) / 1000,
      machine,
      fsyncMs: { before: fsyncBefore, after: probeFsync(workDir) },
      options,
      messageChars,
      convoy,
      targets: checkTargets(convoy, read, idle),
      read,
      wal,
      idle,
    };
  } finally {
    forget();
    removeDirs();
  }
}

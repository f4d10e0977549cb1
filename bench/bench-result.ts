/** The shape of `bench/results/<timestamp>.json`: everything one run of the suite measured. */
import type { ConvoyMode } from "./modes.js";
import type { ConvoyResult } from "./convoy.js";
import type { Machine } from "./machine.js";
import type { LatencySummary } from "./stats.js";
import type { ReadSideResult } from "./read-side.js";
import type { TargetCheck } from "./targets.js";
import type { WalResult } from "./wal-growth.js";
import type { IdleFootprintResult } from "./idle-footprint.js";

export interface ResolvedBenchOptions {
  preset: "quick" | "full";
  ks: number[];
  seconds: number;
  /**
   * Calls each client makes before the synchronized start: enough for V8 to optimize the library's
   * and Node's stream code, so a cell measures what a long-lived process (a gateway) pays per
   * append rather than its first calls' compilation.
   */
  warmupCalls: number;
  reps: number;
  /** Corpus sizes of the read side (empty: no read side and no WAL check). */
  messages: number[];
  synchronous: "FULL" | "NORMAL";
  modes: ConvoyMode[];
  /** Per read operation and condition. */
  readSeconds: number;
  /**
   * Each read operation runs this long, unmeasured, before its measured window: the figures are a
   * daemon's (and a client's) that has served a while, not its first calls, which V8 has not
   * compiled yet (those are the idle footprint's cold reads).
   */
  readWarmupSeconds: number;
  walSeconds: number;
  /** The daemons' TRUNCATE bound; null for their default. */
  walLimitMb: number | null;
  /** The bound of the WAL check's daemon (quick: small, so that a short run reaches it). */
  walCheckLimitMb: number | null;
  seed: number;
  out: string;
  cacheDir: string;
  /** Null: a fresh temporary directory, removed afterwards. */
  workDir: string | null;
  /** The convoy matrix runs once per value: every process's fsync delayed this many ms (0: the disk as it is). */
  fsyncDelaysMs: number[];
  /** The idle footprint: quiet time before each measurement, its counting window, the soak (0: none). */
  idleSettleSeconds: number;
  idleWindowSeconds: number;
  soakSeconds: number;
  /** First reads timed after the reader pool shrank. */
  coldReads: number;
  /** Only the idle footprint runs (`--idle-only`). */
  idleOnly: boolean;
}

export interface BenchResult {
  /** Bumped when this shape changes. */
  format: 1;
  startedAt: string;
  durationS: number;
  machine: Machine;
  /** fsync of a 16 KiB write in the work directory, before and after the suite (ms). */
  fsyncMs: { before: LatencySummary; after: LatencySummary };
  options: ResolvedBenchOptions;
  /** Mean length of the convoy's messages. */
  messageChars: number;
  convoy: ConvoyResult;
  targets: TargetCheck[];
  read: ReadSideResult | null;
  wal: WalResult | null;
  /** Absent from results written before the idle footprint was measured. */
  idle?: IdleFootprintResult | null;
}

/** `bench/results/<timestamp>-idle.json`, from `--idle-only`. */
export interface IdleOnlyResult {
  startedAt: string;
  machine: Machine;
  options: ResolvedBenchOptions;
  idle: IdleFootprintResult;
}

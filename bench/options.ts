/**
 * The suite's options, resolved once where they enter: a preset (quick or full) with each
 * explicit option overriding it, every value checked.
 */
import { isAbsolute, resolve } from "node:path";
import type { ResolvedBenchOptions } from "./bench-result.js";
import { CONVOY_MODES, isConvoyMode, type ConvoyMode } from "./modes.js";
import { DEFAULT_CACHE_DIR, DEFAULT_RESULTS_DIR } from "./paths.js";

/** As given on the command line: all strings, all optional. */
export interface BenchArgs {
  full?: boolean;
  k?: string;
  seconds?: string;
  "warmup-calls"?: string;
  reps?: string;
  messages?: string;
  synchronous?: string;
  modes?: string;
  "read-seconds"?: string;
  "read-warmup-seconds"?: string;
  "wal-seconds"?: string;
  "wal-limit-mb"?: string;
  seed?: string;
  out?: string;
  "cache-dir"?: string;
  "work-dir"?: string;
  "fsync-delay-ms"?: string;
  "idle-settle-seconds"?: string;
  "idle-seconds"?: string;
  "soak-seconds"?: string;
  "cold-reads"?: string;
  "idle-only"?: boolean;
}

type Preset = Omit<ResolvedBenchOptions, "out" | "cacheDir" | "workDir" | "synchronous" | "modes" | "walLimitMb" | "seed" | "idleOnly">;

const PRESETS: Record<"quick" | "full", Preset> = {
  // 4 s of WAL growth stay under the daemon's default bound (64 MiB): a small one shows it at work.
  quick: {
    preset: "quick", ks: [1, 4, 16, 32], seconds: 3, warmupCalls: 200, reps: 1, messages: [20_000], readSeconds: 0.6, readWarmupSeconds: 2, walSeconds: 4, walCheckLimitMb: 8,
    fsyncDelaysMs: [0, 1], idleSettleSeconds: 10, idleWindowSeconds: 10, soakSeconds: 60, coldReads: 10,
  },
  full: {
    preset: "full", ks: [1, 4, 16, 32, 64], seconds: 10, warmupCalls: 200, reps: 3, messages: [200_000, 1_000_000, 2_000_000], readSeconds: 4, readWarmupSeconds: 2, walSeconds: 20,
    walCheckLimitMb: null, fsyncDelaysMs: [0, 1, 3], idleSettleSeconds: 10, idleWindowSeconds: 60, soakSeconds: 3600, coldReads: 30,
  },
};

export class BenchOptionError extends Error {
  override readonly name = "BenchOptionError";
}

function positive(value: string | undefined, name: string, fallback: number, integer: boolean): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0 || (integer && !Number.isInteger(n))) {
    throw new BenchOptionError(`--${name} must be a positive ${integer ? "integer" : "number"}, got ${JSON.stringify(value)}`);
  }
  return n;
}

function list(value: string | undefined, name: string, fallback: number[], allowEmpty = false): number[] {
  if (value === undefined) return fallback;
  const items = value.split(",").map((s) => s.trim()).filter((s) => s !== "");
  if (items.length === 0 && !allowEmpty) throw new BenchOptionError(`--${name} needs at least one value`);
  return items.map((s) => positive(s, name, 0, true));
}

/** Milliseconds added to every fsync: non-negative numbers, 0 being the machine's own disk. */
function delays(value: string | undefined, fallback: number[]): number[] {
  if (value === undefined) return fallback;
  const items = value.split(",").map((s) => s.trim()).filter((s) => s !== "");
  if (items.length === 0) throw new BenchOptionError("--fsync-delay-ms needs at least one value");
  const ms = items.map((s) => {
    const n = Number(s);
    if (!Number.isFinite(n) || n < 0 || n > 1000) throw new BenchOptionError(`--fsync-delay-ms takes milliseconds from 0 to 1000, got ${JSON.stringify(s)}`);
    return n;
  });
  return [...new Set(ms)].sort((a, b) => a - b);
}

function modes(value: string | undefined): ConvoyMode[] {
  if (value === undefined) return [...CONVOY_MODES];
  const names = value.split(",").map((s) => s.trim()).filter((s) => s !== "");
  for (const name of names) {
    if (!isConvoyMode(name)) throw new BenchOptionError(`--modes: unknown mode ${JSON.stringify(name)} (known: ${CONVOY_MODES.join(", ")})`);
  }
  return CONVOY_MODES.filter((m) => names.includes(m));
}

function dir(value: string | undefined, fallback: string): string {
  if (value === undefined) return fallback;
  return isAbsolute(value) ? value : resolve(value);
}

export function resolveBenchOptions(args: BenchArgs): ResolvedBenchOptions {
  const preset = PRESETS[args.full ? "full" : "quick"];
  const synchronous = (args.synchronous ?? "FULL").toUpperCase();
  if (synchronous !== "FULL" && synchronous !== "NORMAL") throw new BenchOptionError(`--synchronous must be FULL or NORMAL, got ${args.synchronous}`);
  const walLimitMb = args["wal-limit-mb"] === undefined ? null : positive(args["wal-limit-mb"], "wal-limit-mb", 0, true);
  return {
    preset: preset.preset,
    ks: [...new Set(list(args.k, "k", preset.ks))].sort((a, b) => a - b),
    seconds: positive(args.seconds, "seconds", preset.seconds, false),
    // `--warmup-calls 0`: the first calls are measured too.
    warmupCalls: args["warmup-calls"] === "0" ? 0 : positive(args["warmup-calls"], "warmup-calls", preset.warmupCalls, true),
    reps: positive(args.reps, "reps", preset.reps, true),
    // `--messages ''` (or 0) skips the read side and the WAL check.
    messages: args.messages === "0" ? [] : list(args.messages, "messages", preset.messages, true),
    synchronous,
    modes: modes(args.modes),
    readSeconds: positive(args["read-seconds"], "read-seconds", preset.readSeconds, false),
    // `--read-warmup-seconds 0`: each operation's first calls are measured (after one call).
    readWarmupSeconds: args["read-warmup-seconds"] === "0" ? 0 : positive(args["read-warmup-seconds"], "read-warmup-seconds", preset.readWarmupSeconds, false),
    walSeconds: positive(args["wal-seconds"], "wal-seconds", preset.walSeconds, false),
    walLimitMb,
    walCheckLimitMb: walLimitMb ?? preset.walCheckLimitMb,
    seed: positive(args.seed, "seed", 42, true),
    out: dir(args.out, DEFAULT_RESULTS_DIR),
    cacheDir: dir(args["cache-dir"], DEFAULT_CACHE_DIR),
    workDir: args["work-dir"] === undefined ? null : dir(args["work-dir"], ""),
    fsyncDelaysMs: delays(args["fsync-delay-ms"], preset.fsyncDelaysMs),
    idleSettleSeconds: positive(args["idle-settle-seconds"], "idle-settle-seconds", preset.idleSettleSeconds, false),
    // `--idle-seconds 0` leaves the idle footprint out of the suite.
    idleWindowSeconds: args["idle-seconds"] === "0" ? 0 : positive(args["idle-seconds"], "idle-seconds", preset.idleWindowSeconds, false),
    // `--soak-seconds 0` skips the soak.
    soakSeconds: args["soak-seconds"] === "0" ? 0 : positive(args["soak-seconds"], "soak-seconds", preset.soakSeconds, false),
    coldReads: positive(args["cold-reads"], "cold-reads", preset.coldReads, true),
    idleOnly: args["idle-only"] ?? false,
  };
}

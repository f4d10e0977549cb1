/**
 * Slow disks, simulated: bench/fsync-delay.c, built here with the machine's C compiler, is
 * preloaded (LD_PRELOAD) into every process a convoy run starts — the clients, the Python
 * workers, the daemon — and makes each fsync/fdatasync do its real work, then sleep N ms.
 * A library rather than strace's fault injection: tracing makes every thread hop inside a traced
 * process several times dearer, which would penalise the daemon and not direct mode.
 */
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { BENCH_SOURCE_DIR } from "./paths.js";

/** The delay in milliseconds (a decimal number) the library reads at its first fsync. */
export const DELAY_ENV = "SESSIONDB_FSYNC_DELAY_MS";
/** A file each preloaded process appends "<pid> <delayed calls>" to at exit (when it delayed any). */
export const REPORT_ENV = "SESSIONDB_FSYNC_DELAY_REPORT";

const SOURCE = join(BENCH_SOURCE_DIR, "fsync-delay.c");

export class FsyncDelayBuildError extends Error {
  override readonly name = "FsyncDelayBuildError";
}

/**
 * The compiled library under `cacheDir` (built once per version of the C source). Fails with a
 * clear message when there is no C compiler.
 */
export function buildFsyncDelayLibrary(cacheDir: string): string {
  const source = readFileSync(SOURCE);
  const library = join(cacheDir, `fsync-delay-${createHash("sha256").update(source).digest("hex").slice(0, 12)}.so`);
  if (existsSync(library)) return loadableByAnyone(library);
  mkdirSync(cacheDir, { recursive: true });
  const tmp = `${library}.tmp-${process.pid}`;
  const cc = spawnSync("cc", ["-shared", "-fPIC", "-O2", "-o", tmp, SOURCE, "-ldl"], { encoding: "utf8" });
  if (cc.error !== undefined) {
    throw new FsyncDelayBuildError(
      `--fsync-delay-ms needs a C compiler to build ${SOURCE}, and "cc" could not be run (${cc.error.message}); ` +
        "install one (e.g. apt-get install gcc), or run with --fsync-delay-ms 0",
    );
  }
  if (cc.status !== 0) throw new FsyncDelayBuildError(`cc failed to build ${SOURCE}:\n${cc.stderr}`);
  renameSync(tmp, library);
  return loadableByAnyone(library);
}

/**
 * A copy of the library that every user can load, in a fresh directory of its own: the PostgreSQL
 * server of the PostgreSQL modes runs as an unprivileged user, which cannot read a private cache.
 */
function loadableByAnyone(library: string): string {
  const dir = mkdtempSync(join(tmpdir(), "sessiondb-fsync-delay-"));
  chmodSync(dir, 0o755);
  const copy = join(dir, basename(library));
  copyFileSync(library, copy);
  chmodSync(copy, 0o644);
  return copy;
}

/** The environment variables that make a process (and all it starts) see fsync take `delayMs` longer. */
export function fsyncDelayEnv(library: string, delayMs: number, reportFile?: string): Record<string, string> {
  const preload = [library, process.env.LD_PRELOAD].filter((p) => p !== undefined && p !== "").join(" ");
  return { LD_PRELOAD: preload, [DELAY_ENV]: String(delayMs), ...(reportFile === undefined ? {} : { [REPORT_ENV]: reportFile }) };
}

/**
 * Runs `fn` with the delay in this process's environment, which every child it spawns inherits
 * (the bench spawns all its processes with the inherited environment); restores it afterwards.
 * A delay of 0 runs on the machine's own disk, without the library.
 */
export async function withFsyncDelay<T>(library: string | null, delayMs: number, fn: () => Promise<T>): Promise<T> {
  if (delayMs === 0 || library === null) return fn();
  const set = fsyncDelayEnv(library, delayMs);
  const saved = Object.fromEntries(Object.keys(set).map((k) => [k, process.env[k]]));
  Object.assign(process.env, set);
  try {
    return await fn();
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

/** Where the benchmark finds its scripts and keeps its files, from the compiled `dist/bench/`. */
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const REPO_ROOT = fileURLToPath(new URL("../../", import.meta.url));
export const BENCH_SOURCE_DIR = join(REPO_ROOT, "bench");

/** The `sessiondb` command, compiled. */
export const CLI_PATH = fileURLToPath(new URL("../src/cli/main.js", import.meta.url));
/** Generated corpora, reused across runs (gitignored). */
export const DEFAULT_CACHE_DIR = join(BENCH_SOURCE_DIR, ".cache");
/** Results JSON and charts. */
export const DEFAULT_RESULTS_DIR = join(BENCH_SOURCE_DIR, "results");
/** tsc does not copy Python files: the Python writer runs from the source tree. */
export const PYTHON_WORKER = join(BENCH_SOURCE_DIR, "workers", "python-jitter.py");

/** A compiled child-process script of `bench/workers/`. */
export function workerScript(name: string): string {
  return fileURLToPath(new URL(`./workers/${name}.js`, import.meta.url));
}

/** The version of `python3`, or null when there is none. */
export function pythonVersion(): string | null {
  const probe = spawnSync("python3", ["--version"], { encoding: "utf8" });
  if (probe.error !== undefined || probe.status !== 0) return null;
  return (probe.stdout || probe.stderr).trim().replace(/^Python /, "");
}

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
/** tsc does not copy Python files: the Python writers run from the source tree. */
export function pythonWorker(name: "python-jitter" | "python-daemon"): string {
  return join(BENCH_SOURCE_DIR, "workers", `${name}.py`);
}

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

/** Why the Python client cannot run here (no python3, or no msgpack for it), or null. */
export function pythonClientMissing(): string | null {
  if (pythonVersion() === null) return "python3 is not installed";
  const probe = spawnSync("python3", ["-c", "import msgpack"], { encoding: "utf8" });
  return probe.status === 0 ? null : "the Python client needs msgpack (python3 -m pip install msgpack)";
}

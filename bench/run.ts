/**
 * `npm run bench` (quick, about 8 minutes on 2 cores) and `npm run bench -- --full`: runs the
 * suite, prints the tables, writes `bench/results/<timestamp>.json` and the charts next to it.
 * Exits non-zero if any run lost an acknowledged append.
 */
import { parseArgs } from "node:util";
import { FsyncDelayBuildError } from "./fsync-delay.js";
import { exitCleanlyOnInterrupt } from "./interrupt.js";
import { BenchOptionError, resolveBenchOptions, type BenchArgs } from "./options.js";
import { formatIdleReport, formatReport, writeIdleResult, writeResults } from "./report.js";
import { runIdleOnly, runSuite } from "./suite.js";

const USAGE = `Usage: npm run bench [-- options]

  --full                 longer runs: K up to 64, 3 repetitions, corpora of 200,000, 1,000,000 and 2,000,000 messages,
                         fsync delays 0, 1 and 3 ms
  --k 1,4,16,32          client process counts of the convoy matrix
  --seconds N            length of each convoy run (quick 3, full 10)
  --warmup-calls N       calls each client makes before the measured window (default 200: past the first
                         calls, which compile the client; its hottest functions reach V8's optimizing
                         tier after about 1,250-2,750 calls; 0 measures the first calls)
  --reps N               repetitions of the matrix (quick 1, full 3)
  --modes a,b            convoy modes: busy, jitter, python-jitter, python-daemon, daemon, daemon-keyless, daemon-ping, daemon-pipelined,
                         ceiling, pg-direct, pg-daemon, pg-daemon-2 (the pg- modes run on a throwaway
                         PostgreSQL server with its defaults, synchronous_commit=on; skipped without
                         /usr/lib/postgresql/*/bin)
  --fsync-delay-ms N,M    run the convoy matrix once per value with every process's fsync/fdatasync delayed
                         N ms (quick 0,1; 0 = the disk as it is), through bench/fsync-delay.c, preloaded;
                         any value above 0 needs a C compiler (cc)
  --synchronous MODE     FULL (default) or NORMAL, for the daemon and every mode that can set it
                         (sessiondb's direct mode always runs FULL)
  --messages N,M         corpus sizes of the read side (quick 20000); 0 skips the read side and WAL check
  --read-seconds N       measuring time per read operation and condition (quick 0.6, full 4)
  --read-warmup-seconds N  unmeasured calls of each read operation and condition before its measured time
                         (default 2; 0 measures from the second call)
  --wal-seconds N        length of each WAL growth run (quick 4, full 20)
  --wal-limit-mb N       the daemons' WAL bound (default: the daemon's own; the quick WAL check uses 8)
  --seed N               seed of the generated text (default 42)
  --out DIR              results directory (default bench/results)
  --cache-dir DIR        generated corpora (default bench/.cache)
  --work-dir DIR         where run files go (default: a temporary directory, removed afterwards)
  --idle-only            only the idle daemon's footprint: RSS and wake-ups after a quiet spell, fresh and after
                         use, a soak, and the first read after the reader pool shrank (writes <timestamp>-idle.json)
  --idle-settle-seconds N  quiet time with no client before each idle measurement (default 10)
  --idle-seconds N       the window its wake-ups and CPU are counted over (quick 10, full 60); 0 leaves the
                         idle footprint out of the suite
  --soak-seconds N       how long the idle daemon is watched for growth (quick 60, full 3600: an hour); 0 skips it
  --cold-reads N         first reads timed after the reader pool shrank (quick 10, full 30)
`;

const STRING_OPTIONS = [
  "k", "seconds", "warmup-calls", "reps", "messages", "synchronous", "modes", "read-seconds", "read-warmup-seconds", "wal-seconds", "wal-limit-mb", "seed", "out",
  "cache-dir", "work-dir", "fsync-delay-ms", "idle-settle-seconds", "idle-seconds", "soak-seconds", "cold-reads",
] as const;

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      full: { type: "boolean" },
      "idle-only": { type: "boolean" },
      help: { type: "boolean", short: "h" },
      ...Object.fromEntries(STRING_OPTIONS.map((name) => [name, { type: "string" as const }])),
    },
    strict: true,
    allowPositionals: false,
  });
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const options = resolveBenchOptions(values as BenchArgs);
  const log = (line: string) => process.stderr.write(`${line}\n`);
  exitCleanlyOnInterrupt(log);
  if (options.idleOnly) {
    if (options.idleWindowSeconds === 0) throw new BenchOptionError("--idle-only needs --idle-seconds above 0");
    log(`sessiondb bench, idle footprint (${options.preset}): soak ${options.soakSeconds} s`);
    const result = await runIdleOnly(options, log);
    process.stdout.write(formatIdleReport(result));
    process.stdout.write(`\nWritten: ${writeIdleResult(result, options.out)}\n`);
    return 0;
  }
  log(
    `sessiondb bench (${options.preset}): K=${options.ks.join(",")}, ${options.reps} rep(s) × ${options.seconds} s, ` +
      `fsync delays ${options.fsyncDelaysMs.join(", ")} ms, modes ${options.modes.join(", ")}`,
  );
  const result = await runSuite(options, log);
  process.stdout.write(formatReport(result));
  const files = await writeResults(result, options.out);
  process.stdout.write(`\nWritten: ${files.join(", ")}\n`);
  const lost = result.convoy.runs.filter((r) => !r.rows.exact);
  if (lost.length > 0) {
    log(`ROW COUNT MISMATCH in ${lost.length} run(s): ${lost.map((r) => `${r.mode} K=${r.k} fsync +${r.fsyncDelayMs} ms rep ${r.rep + 1}`).join(", ")}`);
    return 1;
  }
  return 0;
}

main().then(
  (code) => (process.exitCode = code),
  (err: unknown) => {
    const usage = err instanceof BenchOptionError || err instanceof FsyncDelayBuildError || (err as { code?: string })?.code?.startsWith("ERR_PARSE_ARGS");
    process.stderr.write(`${usage ? `${(err as Error).message}\n\n${USAGE}` : ((err as Error)?.stack ?? String(err))}\n`);
    process.exitCode = usage ? 2 : 1;
  },
);

/**
 * The convoy matrix: every mode at every K, repeated. Within a repetition the modes alternate
 * (the order rotates from one K and one repetition to the next), so a noisy machine weighs on
 * all of them alike; figures are reported as medians with their range across repetitions, and
 * ratios are taken between runs of the same repetition.
 */
import { join } from "node:path";
import { PgServer } from "../test/helpers/postgres-server.js";
import { runConvoyCell, type ConvoyRun } from "./convoy-run.js";
import { withFsyncDelay } from "./fsync-delay.js";
import { undoOnInterrupt } from "./interrupt.js";
import { MODES, type ConvoyMode, type ModeSpec } from "./modes.js";
import { addHistograms, ratio, spread, type Spread } from "./stats.js";
import { THREAD_ROLES, type ThreadRole } from "./cpu-usage.js";

export interface ConvoyOptions {
  ks: number[];
  reps: number;
  seconds: number;
  /** Calls each client makes before the synchronized start, outside the measurement. */
  warmupCalls: number;
  modes: ConvoyMode[];
  synchronous: "FULL" | "NORMAL";
  walLimitMb: number | null;
  workDir: string;
  socketDir: string;
  messagesFile: string;
  /** The matrix runs once per value (ms added to every fsync); see fsync-delay.ts. */
  fsyncDelaysMs: number[];
  /** The preload library; null when every delay is 0. */
  fsyncLibrary: string | null;
}

export interface ConvoyCellSummary {
  mode: ConvoyMode;
  k: number;
  fsyncDelayMs: number;
  clients: number;
  reps: number;
  appendsPerS: Spread | null;
  p50: Spread | null;
  p99: Spread | null;
  p999: Spread | null;
  max: Spread | null;
  /** All failures of all repetitions. */
  failures: number;
  fairness: Spread | null;
  commits: Spread | null;
  meanBatchSize: Spread | null;
  retries: Spread | null;
  /** Every run's file held exactly its acknowledged appends. */
  rowsExact: boolean;
  /** Acknowledged appends checked, over all repetitions. */
  rowsChecked: number;
  /** Share of the machine's cores busy during the run (0–1). */
  machineBusy: Spread | null;
  /** Cores the daemon process kept busy (CPU seconds per second). */
  daemonCores: Spread | null;
  /** Cores all client processes kept busy together. */
  clientCores: Spread | null;
  /** Cores kept busy by everything else (other programs on the machine). */
  otherCores: Spread | null;
  /** Share of the cores' time the host took (steal). */
  stolen: Spread | null;
  /** Share of their runnable time the clients' threads waited for a core. */
  clientsWaitShare: Spread | null;
  /** The same for the daemon's threads. */
  daemonWaitShare: Spread | null;
  /** CPU microseconds per append, clients and daemon together. */
  cpuUsPerAppend: Spread | null;
  /** The clients' part, and the daemon's, and the daemon's by thread (issue 27). */
  clientsUsPerAppend?: Spread | null;
  daemonUsPerAppend?: Spread | null;
  daemonThreadsUsPerAppend?: Record<ThreadRole, Spread | null> | null;
}

/** daemon / jitter at one K and fsync delay, each ratio taken within a repetition. */
export interface ConvoyRatio {
  k: number;
  fsyncDelayMs: number;
  throughput: Spread | null;
  p99: Spread | null;
  max: Spread | null;
  /** daemon-ping / jitter calls per second: what the round trip alone allows, against direct mode. */
  pingThroughput: Spread | null;
  /** daemon / daemon-ping: the share of the bare round trip's rate the appends keep. */
  appendsVsPing: Spread | null;
  /** daemon / daemon-keyless appends/s: what idempotency keys leave of the throughput (issue 25: ≥ 0.95). */
  keysThroughput: Spread | null;
  /** daemon / daemon-keyless p50: what they add to an append's time. */
  keysP50: Spread | null;
}

/**
 * Where a lone append's time goes through the daemon (K = 1, p50s of one run, medians over the
 * repetitions), from what the bench measures anyway, so it costs the daemon nothing: the bare
 * round trip (daemon-ping: client → socket, decode, reply, client), the SQL and the COMMIT inside
 * the writer (its lock-hold and commit times), and the rest: the hops to the writer thread and
 * back. p50s do not add up exactly; the rest absorbs the difference.
 */
export interface LoneAppend {
  fsyncDelayMs: number;
  appendMs: Spread | null;
  roundTripMs: Spread | null;
  sqlMs: Spread | null;
  commitMs: Spread | null;
  hopsMs: Spread | null;
}

export interface ConvoyResult {
  skipped: Array<{ mode: ConvoyMode; reason: string }>;
  runs: ConvoyRun[];
  summary: ConvoyCellSummary[];
  ratios: ConvoyRatio[];
  /** daemon-pipelined / ceiling throughput, within each repetition, at the first fsync delay. */
  pipelinedVsCeiling: Spread | null;
  /** Per fsync delay, when the matrix ran daemon and daemon-ping at K = 1. */
  loneAppend: LoneAppend[];
  /** The fsync delays the matrix ran at; the histograms and issue 3's targets use the first. */
  fsyncDelaysMs: number[];
  /** The K of the latency histograms (the largest run). */
  histogramK: number;
  histograms: Array<{ mode: ConvoyMode; counts: number[] }>;
}

interface Cell {
  mode: ConvoyMode;
  k: number;
}

/** The runs of one repetition: per K, the modes in an order rotated by K and repetition. */
function schedule(ks: number[], modes: ConvoyMode[], rep: number): Cell[] {
  const cells: Cell[] = [];
  ks.forEach((k, ki) => {
    // Single-client modes do not depend on K: they run once per repetition, with the first K.
    const here = modes.filter((m) => MODES[m].clients === "k" || ki === 0);
    const shift = here.length === 0 ? 0 : (rep + ki) % here.length;
    for (const mode of [...here.slice(shift), ...here.slice(0, shift)]) cells.push({ mode, k: MODES[mode].clients === "k" ? k : 1 });
  });
  return cells;
}

export async function runConvoy(options: ConvoyOptions, log: (line: string) => void): Promise<ConvoyResult> {
  const skipped: ConvoyResult["skipped"] = [];
  const modes = options.modes.filter((mode) => {
    const reason = MODES[mode].unavailable();
    if (reason !== null) skipped.push({ mode, reason });
    return reason === null;
  });
  for (const s of skipped) log(`convoy: skipping ${s.mode}: ${s.reason}`);
  return summarize(await runMatrix(options, modes, log), skipped, options.ks, options.fsyncDelaysMs);
}

async function runMatrix(options: ConvoyOptions, modes: ConvoyMode[], log: (line: string) => void): Promise<ConvoyRun[]> {
  const runs: ConvoyRun[] = [];
  let index = 0;
  const usesPostgres = modes.some((m) => (MODES[m] as ModeSpec).engine === "postgres");
  for (const fsyncDelayMs of options.fsyncDelaysMs) {
    await withFsyncDelay(options.fsyncLibrary, fsyncDelayMs, async () => {
      // One PostgreSQL server per fsync cost, started inside it so that its own fsyncs are delayed
      // like every other process's; with its defaults (fsync, synchronous_commit=on).
      const postgres = usesPostgres ? PgServer.start({ durable: true }) : null;
      if (postgres !== null) log(`convoy: a PostgreSQL server in ${postgres.root}`);
      const forget = postgres === null ? null : undoOnInterrupt(() => postgres.stop());
      try {
        await postgres?.prepareTemplate();
        for (let rep = 0; rep < options.reps; rep++) {
          const cells = schedule(options.ks, modes, rep);
          for (const [order, cell] of cells.entries()) {
            index++;
            const run = await runConvoyCell({
              ...cell,
              rep,
              order,
              fsyncDelayMs,
              seconds: options.seconds,
              warmupCalls: options.warmupCalls,
              synchronous: options.synchronous,
              walLimitMb: options.walLimitMb,
              dir: join(options.workDir, `convoy-${index}`),
              socket: join(options.socketDir, `c${index}.sock`),
              messagesFile: options.messagesFile,
              postgres,
            });
            runs.push(run);
            log(
              `convoy fsync +${fsyncDelayMs} ms rep ${rep + 1}/${options.reps} K=${String(cell.k).padStart(2)} ${cell.mode.padEnd(16)} ` +
                `${run.appendsPerS.toFixed(0).padStart(6)} appends/s  p99 ${run.latencyMs.p99.toFixed(1)} ms  ` +
                `max ${run.latencyMs.max.toFixed(0)} ms  failures ${run.failures}  rows ${run.rows.exact ? "exact" : "MISMATCH"}`,
            );
          }
        }
      } finally {
        forget?.();
        postgres?.stop();
      }
    });
  }
  return runs;
}

function summarize(runs: ConvoyRun[], skipped: ConvoyResult["skipped"], ks: number[], fsyncDelaysMs: number[]): ConvoyResult {
  const cells = new Map<string, ConvoyRun[]>();
  for (const run of runs) {
    const key = `${run.mode}@${run.k}+${run.fsyncDelayMs}`;
    cells.set(key, [...(cells.get(key) ?? []), run]);
  }
  const summary = [...cells.values()].map(summarizeCell);
  const find = (mode: ConvoyMode, k: number, delay: number, rep: number) =>
    runs.find((r) => r.mode === mode && r.k === k && r.fsyncDelayMs === delay && r.rep === rep);
  const reps = Math.max(0, ...runs.map((r) => r.rep + 1));
  const perRep = <T>(f: (rep: number) => T) => Array.from({ length: reps }, (_, rep) => f(rep));
  const ratios = fsyncDelaysMs.flatMap((delay) =>
    ks.map((k) => {
      const runsOfRep = perRep((rep) => [find("daemon", k, delay, rep), find("jitter", k, delay, rep), find("daemon-ping", k, delay, rep)] as const);
      const keyless = perRep((rep) => [find("daemon", k, delay, rep), find("daemon-keyless", k, delay, rep)] as const);
      return {
        k,
        fsyncDelayMs: delay,
        throughput: spread(runsOfRep.map(([d, j]) => ratio(d?.appendsPerS, j?.appendsPerS))),
        p99: spread(runsOfRep.map(([d, j]) => ratio(d?.latencyMs.p99, j?.latencyMs.p99))),
        max: spread(runsOfRep.map(([d, j]) => ratio(d?.latencyMs.max, j?.latencyMs.max))),
        pingThroughput: spread(runsOfRep.map(([, j, p]) => ratio(p?.appendsPerS, j?.appendsPerS))),
        appendsVsPing: spread(runsOfRep.map(([d, , p]) => ratio(d?.appendsPerS, p?.appendsPerS))),
        keysThroughput: spread(keyless.map(([d, n]) => ratio(d?.appendsPerS, n?.appendsPerS))),
        keysP50: spread(keyless.map(([d, n]) => ratio(d?.latencyMs.p50, n?.latencyMs.p50))),
      };
    }),
  );
  const first = fsyncDelaysMs[0] ?? 0;
  const pipelinedVsCeiling = spread(
    perRep((rep) => ratio(find("daemon-pipelined", 1, first, rep)?.appendsPerS, find("ceiling", 1, first, rep)?.appendsPerS)),
  );
  const histogramK = Math.max(...ks);
  const histogramModes = [...new Set(runs.map((r) => r.mode))];
  const histograms = histogramModes.map((mode) => {
    const k = MODES[mode].clients === "k" ? histogramK : 1;
    return { mode, counts: addHistograms(runs.filter((r) => r.mode === mode && r.k === k && r.fsyncDelayMs === first).map((r) => r.histogram)) };
  });
  const loneAppend = fsyncDelaysMs.map((delay) => {
    const pairs = perRep((rep) => [find("daemon", 1, delay, rep), find("daemon-ping", 1, delay, rep)] as const);
    const parts = pairs.map(([append, ping]) => {
      if (append?.daemon == null || ping === undefined) return null;
      const commitMs = append.daemon.commitMs.p50;
      const sqlMs = Math.max(0, append.daemon.lockHeldMs.p50 - commitMs);
      const appendMs = append.latencyMs.p50;
      const roundTripMs = ping.latencyMs.p50;
      return { appendMs, roundTripMs, sqlMs, commitMs, hopsMs: appendMs - roundTripMs - sqlMs - commitMs };
    });
    const of = (f: (p: NonNullable<(typeof parts)[number]>) => number) => spread(parts.map((p) => (p === null ? null : f(p))));
    return {
      fsyncDelayMs: delay,
      appendMs: of((p) => p.appendMs),
      roundTripMs: of((p) => p.roundTripMs),
      sqlMs: of((p) => p.sqlMs),
      commitMs: of((p) => p.commitMs),
      hopsMs: of((p) => p.hopsMs),
    };
  });
  return { skipped, runs, summary, ratios, pipelinedVsCeiling, loneAppend: loneAppend.filter((l) => l.appendMs !== null), fsyncDelaysMs, histogramK, histograms };
}

function summarizeCell(runs: ConvoyRun[]): ConvoyCellSummary {
  const first = runs[0]!;
  const of = (f: (r: ConvoyRun) => number | null) => spread(runs.map(f));
  return {
    mode: first.mode,
    k: first.k,
    fsyncDelayMs: first.fsyncDelayMs,
    clients: first.clients,
    reps: runs.length,
    appendsPerS: of((r) => r.appendsPerS),
    p50: of((r) => r.latencyMs.p50),
    p99: of((r) => r.latencyMs.p99),
    p999: of((r) => r.latencyMs.p999),
    max: of((r) => r.latencyMs.max),
    failures: runs.reduce((sum, r) => sum + r.failures, 0),
    fairness: of((r) => r.fairness),
    commits: of((r) => r.commits),
    meanBatchSize: of((r) => r.meanBatchSize),
    retries: of((r) => r.retries),
    rowsExact: runs.every((r) => r.rows.exact),
    rowsChecked: runs.reduce((sum, r) => sum + r.rows.expected, 0),
    machineBusy: of((r) => r.cpu.machineBusy),
    daemonCores: of((r) => (r.cpu.daemonS === null ? null : r.cpu.daemonS / r.elapsedS)),
    clientCores: of((r) => r.cpu.clientsS / r.elapsedS),
    otherCores: of((r) => r.cpu.otherCores),
    stolen: of((r) => r.cpu.stolen ?? null),
    clientsWaitShare: of((r) => r.cpu.clientsWaitShare),
    daemonWaitShare: of((r) => r.cpu.daemonWaitShare),
    cpuUsPerAppend: of((r) => r.cpu.usPerAppend),
    clientsUsPerAppend: of((r) => r.cpu.clientsUsPerAppend ?? null),
    daemonUsPerAppend: of((r) => r.cpu.daemonUsPerAppend ?? null),
    daemonThreadsUsPerAppend: runs.some((r) => r.cpu.daemonThreadsUsPerAppend) ? Object.fromEntries(
      THREAD_ROLES.map((role) => [role, of((r) => r.cpu.daemonThreadsUsPerAppend?.[role] ?? null)]),
    ) as Record<ThreadRole, Spread | null> : null,
  };
}

/**
 * One run of the convoy matrix: one mode at one K, on a fresh file. K client processes are set
 * up, released at the same instant, append in a closed loop for the run length, and report;
 * then every session is checked to hold exactly the appends its client was told succeeded.
 */
import { mkdirSync, rmSync } from "node:fs";
import { cpus } from "node:os";
import { join } from "node:path";
import type { DaemonStats } from "../src/protocol/control.js";
import { BenchChild } from "./child-process.js";
import {
  busyShare, machineTimes, processCpuMs, schedDelta, schedTimes, stolenShare, threadDelta, threadTimes, waitShare,
  type MachineTimes, type SchedTimes, type ThreadRole, type ThreadTimes,
} from "./cpu-usage.js";
import type { PgServer } from "../test/helpers/postgres-server.js";
import { checkPgRows, checkRows, createDatabase, type RowCheck } from "./database-file.js";
import { DaemonProcess } from "./daemon-process.js";
import { MODES, type ConvoyMode, type ModeSpec } from "./modes.js";
import { histogram, summarizeLatencies, type LatencySummary } from "./stats.js";
import type { WriterConfig, WriterReport } from "./workers/protocol.js";

export interface ConvoyRunSpec {
  mode: ConvoyMode;
  /** The K of the matrix cell (single-client modes run one process whatever K). */
  k: number;
  rep: number;
  /** Position of this run within its repetition. */
  order: number;
  /** Milliseconds every process's fsync was delayed (set in the environment by the caller). */
  fsyncDelayMs: number;
  seconds: number;
  /** Calls each client makes before the synchronized start, outside the measurement. */
  warmupCalls: number;
  synchronous: "FULL" | "NORMAL";
  walLimitMb: number | null;
  /** Where the run's file goes (removed afterwards). */
  dir: string;
  socket: string;
  messagesFile: string;
  /** The server the PostgreSQL modes get a fresh database on (null when none runs). */
  postgres: PgServer | null;
}

export interface ClientFigures {
  appends: number;
  failures: number;
  retries: number | null;
  appendsPerS: number;
}

export interface DaemonFigures {
  commitMs: { p50: number; p99: number; max: number };
  lockHeldMs: { p50: number; p99: number; max: number };
  maxBatchSize: number;
  checkpoints: { passive: number; truncate: number };
}

export interface CpuFigures {
  /** CPU seconds of all client processes during the run. */
  clientsS: number;
  /** CPU seconds of the daemon process (all its threads); null without a daemon or off Linux. */
  daemonS: number | null;
  /** Share of all cores busy from `go` until every client exited (0–1). */
  machineBusy: number | null;
  /** Cores kept busy by everything else on the machine (other programs, the kernel's own work). */
  otherCores: number | null;
  /** Share (0–1) of the cores' time the host gave to other virtual machines (steal); null where
   *  the kernel does not tell. Absent from results written before it was measured. */
  stolen?: number | null;
  /** Share (0–1) of the time the clients' threads were ready to run that they waited for a core;
   *  null where the kernel does not tell. */
  clientsWaitShare: number | null;
  /** The same for the daemon's threads. */
  daemonWaitShare: number | null;
  /** CPU microseconds the clients and the daemon spent per append (per call for daemon-ping);
   *  null where the daemon's CPU time is unknown. */
  usPerAppend: number | null;
  /** The clients' part of it (all client processes together, per append). Absent from results written before issue 27. */
  clientsUsPerAppend?: number | null;
  /** The daemon's part (its whole process, per append); null without a daemon. */
  daemonUsPerAppend?: number | null;
  /** The daemon's part by thread (Linux's schedstat): its main thread, the writer, the readers, the rest (GC, compilation). */
  daemonThreadsUsPerAppend?: Record<ThreadRole, number> | null;
}

export interface ConvoyRun {
  mode: ConvoyMode;
  k: number;
  clients: number;
  fsyncDelayMs: number;
  rep: number;
  order: number;
  elapsedS: number;
  appendsPerS: number;
  latencyMs: LatencySummary;
  failures: number;
  errors: Record<string, number>;
  /** Slowest client's appends/s over the fastest's; null with one client. */
  fairness: number | null;
  commits: number;
  meanBatchSize: number;
  /** Application retries of all clients; null where the mode has none. */
  retries: number | null;
  rows: RowCheck;
  /** Counts per bin of stats.HISTOGRAM_EDGES_MS. */
  histogram: number[];
  clientFigures: ClientFigures[];
  daemon: DaemonFigures | null;
  cpu: CpuFigures;
}

interface Readings {
  wallMs: number;
  machine: MachineTimes;
  daemonCpuMs: number | null;
  daemonSched: SchedTimes | null;
  /** The first daemon's threads. */
  daemonThreads: ThreadTimes | null;
  stats: DaemonStats | null;
}

function hostsOf(spec: ConvoyRunSpec): number {
  const mode: ModeSpec = MODES[spec.mode];
  return mode.hosts ?? 1;
}

/** A fresh database for the run: a file in its dir, or a database on the bench's PostgreSQL server. */
function freshDatabase(spec: ConvoyRunSpec): string {
  const mode: ModeSpec = MODES[spec.mode];
  if (mode.engine !== "postgres") {
    const db = join(spec.dir, "convoy.db");
    createDatabase(db);
    return db;
  }
  if (spec.postgres === null) throw new Error(`${spec.mode} needs the bench's PostgreSQL server`);
  return spec.postgres.createDatabase();
}

/** The run's daemons, each as on a host of its own (its own runtime dir: socket and instance lock). */
async function startDaemons(spec: ConvoyRunSpec, db: string): Promise<DaemonProcess[]> {
  const daemons: DaemonProcess[] = [];
  try {
    for (let host = 0; host < hostsOf(spec); host++) {
      const runtime = join(spec.dir, `host-${host}`);
      mkdirSync(runtime, { recursive: true, mode: 0o700 });
      daemons.push(await DaemonProcess.start({
        db, socket: socketOf(spec, host), synchronous: spec.synchronous, walLimitMb: spec.walLimitMb, env: { XDG_RUNTIME_DIR: runtime },
      }));
    }
    return daemons;
  } catch (err) {
    for (const d of daemons) d.kill();
    throw err;
  }
}

function clientCount(spec: ConvoyRunSpec): number {
  return MODES[spec.mode].clients === "k" ? spec.k : 1;
}

/** The socket of daemon `host` (0 or 1) of a run. */
function socketOf(spec: ConvoyRunSpec, host: number): string {
  return host === 0 ? spec.socket : `${spec.socket}.${host}`;
}

function spawnClient(spec: ConvoyRunSpec, db: string, index: number): BenchChild<WriterReport> {
  const mode = MODES[spec.mode];
  const config: WriterConfig = {
    db,
    socket: mode.daemon ? socketOf(spec, index % hostsOf(spec)) : null,
    sessionId: `bench-${spec.mode}-${index}`,
    messagesFile: spec.messagesFile,
    offset: index * 37,
    seconds: spec.seconds,
    synchronous: spec.synchronous,
    operation: mode.operation,
    inFlight: mode.inFlight,
    keys: "keys" in mode ? mode.keys : true,
    batch: mode.batch,
    warmup: spec.warmupCalls,
  };
  return mode.runtime === "python" ? BenchChild.python(mode.script(), config) : BenchChild.node(mode.script(), config);
}

export async function runConvoyCell(spec: ConvoyRunSpec): Promise<ConvoyRun> {
  const mode = MODES[spec.mode];
  mkdirSync(spec.dir, { recursive: true });
  const db = freshDatabase(spec);
  let daemons: DaemonProcess[] = [];
  const clients: Array<BenchChild<WriterReport>> = [];
  try {
    if (mode.daemon) daemons = await startDaemons(spec, db);
    for (let i = 0; i < clientCount(spec); i++) clients.push(spawnClient(spec, db, i));
    await Promise.all(clients.map((c) => c.ready()));
    const before = await readings(daemons);
    for (const client of clients) client.go();
    const reports = await Promise.all(clients.map((c) => c.report()));
    const after = await readings(daemons);
    await Promise.all(daemons.map((d) => d.stop()));
    daemons = [];
    const appended = (r: WriterReport) => (mode.operation === "append" ? r.warmupAppends + r.appends : 0);
    const acknowledged = new Map(reports.map((r, i) => [`bench-${spec.mode}-${i}`, appended(r)]));
    const rows = db.startsWith("postgres") ? await checkPgRows(db, acknowledged) : checkRows(db, acknowledged);
    return figures(spec, reports, rows, before, after);
  } finally {
    for (const client of clients) client.kill();
    for (const d of daemons) d.kill();
    rmSync(spec.dir, { recursive: true, force: true });
    if (db.startsWith("postgres")) spec.postgres?.dropDatabase(new URL(db).pathname.slice(1));
  }
}

/**
 * Figures at one moment. With two daemons their commits and CPU add up; the wait for a core is
 * the first daemon's.
 */
async function readings(daemons: DaemonProcess[]): Promise<Readings> {
  const all = await Promise.all(daemons.map((d) => d.stats()));
  const first = all[0];
  const stats = first === undefined ? null : {
    ...first,
    writer: { ...first.writer, batches: sum(all.map((s) => s.writer.batches)), writes: sum(all.map((s) => s.writer.writes)) },
  };
  const cpu = daemons.map((d) => processCpuMs(d.pid));
  return {
    wallMs: performance.now(),
    machine: machineTimes(),
    daemonCpuMs: daemons.length === 0 || cpu.includes(null) ? null : sum(cpu as number[]),
    daemonSched: daemons[0] === undefined ? null : schedTimes(daemons[0].pid),
    daemonThreads: daemons.length === 1 ? threadTimes(daemons[0]!.pid) : null,
    stats,
  };
}

function sum(values: number[]): number {
  return values.reduce((a, b) => a + b, 0);
}

function figures(spec: ConvoyRunSpec, reports: WriterReport[], rows: RowCheck, start: Readings, end: Readings): ConvoyRun {
  const before = start.stats;
  const after = end.stats;
  const mode = MODES[spec.mode];
  const startMs = Math.min(...reports.map((r) => r.startMs));
  const endMs = Math.max(...reports.map((r) => r.endMs));
  const elapsedS = Math.max(1e-3, (endMs - startMs) / 1000);
  const appends = reports.reduce((sum, r) => sum + r.appends, 0);
  const clientFigures = reports.map((r) => ({
    appends: r.appends,
    failures: r.failures,
    retries: r.retries,
    appendsPerS: r.appends / Math.max(1e-3, (r.endMs - r.startMs) / 1000),
  }));
  const rates = clientFigures.map((c) => c.appendsPerS);
  const errors: Record<string, number> = {};
  for (const r of reports) for (const [key, n] of Object.entries(r.errors)) errors[key] = (errors[key] ?? 0) + n;
  const latencies = reports.flatMap((r) => r.latenciesMs);
  const commits = after !== null && before !== null ? after.writer.batches - before.writer.batches : appends / mode.batch;
  const written = after !== null && before !== null ? after.writer.writes - before.writer.writes : appends;
  return {
    mode: spec.mode,
    k: spec.k,
    clients: reports.length,
    fsyncDelayMs: spec.fsyncDelayMs,
    rep: spec.rep,
    order: spec.order,
    elapsedS,
    appendsPerS: appends / elapsedS,
    latencyMs: summarizeLatencies(latencies),
    failures: reports.reduce((sum, r) => sum + r.failures, 0),
    errors,
    fairness: reports.length > 1 ? Math.min(...rates) / Math.max(...rates) : null,
    commits,
    meanBatchSize: commits === 0 ? 0 : written / commits,
    retries: mode.countsRetries ? reports.reduce((sum, r) => sum + (r.retries ?? 0), 0) : null,
    rows,
    histogram: histogram(latencies),
    clientFigures,
    daemon: after === null || before === null ? null : daemonFigures(before, after),
    cpu: cpuFigures(reports, start, end, MODES[spec.mode].daemon),
  };
}

function cpuFigures(reports: WriterReport[], start: Readings, end: Readings, hasDaemon: boolean): CpuFigures {
  const clientsS = reports.reduce((sum, r) => sum + r.cpuMs, 0) / 1000;
  const daemonS = start.daemonCpuMs === null || end.daemonCpuMs === null ? null : (end.daemonCpuMs - start.daemonCpuMs) / 1000;
  const machineBusy = busyShare(start.machine, end.machine);
  const wallS = (end.wallMs - start.wallMs) / 1000;
  const otherCores = machineBusy === null ? null : Math.max(0, machineBusy * cpus().length - (clientsS + (daemonS ?? 0)) / wallS);
  const clientsSched = reports.map((r) => r.sched).filter((s): s is SchedTimes => s !== null);
  const clientsWaitShare = clientsSched.length === reports.length ? waitShare(clientsSched) : null;
  const daemonSched = schedDelta(start.daemonSched, end.daemonSched);
  const daemonWaitShare = daemonSched === null ? null : waitShare([daemonSched]);
  const appends = reports.reduce((sum, r) => sum + r.appends, 0);
  const usPerAppend = appends === 0 || (hasDaemon && daemonS === null) ? null : ((clientsS + (daemonS ?? 0)) * 1e6) / appends;
  const stolen = stolenShare(start.machine, end.machine);
  const perAppend = (s: number) => (appends === 0 ? null : (s * 1e6) / appends);
  const threads = threadDelta(start.daemonThreads, end.daemonThreads);
  const daemonThreadsUsPerAppend = threads === null || appends === 0 ? null : {
    main: (threads.main * 1e3) / appends, writer: (threads.writer * 1e3) / appends,
    readers: (threads.readers * 1e3) / appends, other: (threads.other * 1e3) / appends,
  };
  return {
    clientsS, daemonS, machineBusy, otherCores, stolen, clientsWaitShare, daemonWaitShare, usPerAppend,
    clientsUsPerAppend: perAppend(clientsS), daemonUsPerAppend: daemonS === null ? null : perAppend(daemonS), daemonThreadsUsPerAppend,
  };
}

function daemonFigures(before: DaemonStats, after: DaemonStats): DaemonFigures {
  const w = after.writer;
  return {
    commitMs: { p50: w.commitMs.p50, p99: w.commitMs.p99, max: w.commitMs.max },
    lockHeldMs: w.lockHeldMs,
    maxBatchSize: w.maxBatchSize,
    checkpoints: {
      passive: w.checkpoints.passive - before.writer.checkpoints.passive,
      truncate: w.checkpoints.truncate - before.writer.checkpoints.truncate,
    },
  };
}

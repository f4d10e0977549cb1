/**
 * `npm run bench:watch`: the change feed under load (issue 26, item 5). K daemon clients append
 * (each to its own session, one append at a time) while K others watch every session:
 * - commit-to-event latency, bracketed: the commit lies between a writer's sending an append and
 *   its acknowledgement, so each watcher's receipt of that message is timed from both (send-to-
 *   event is an upper bound; ack-to-event is negative when the event beats the writer's own
 *   reply), over the messages whose id is a multiple of `--sample-every` (targets: p50 ≤ 2 ms,
 *   p99 ≤ 10 ms natively);
 * - the writers' throughput with the watchers beside the same run without them (target ≥ 0.9×);
 * - the daemon's RSS while the writers append beside one watcher that never reads its socket
 *   (its queue is dropped past the bound and it is owed a resync), beside the same run with no
 *   watcher: the same flat curve.
 * Writers and watchers are two processes (one each, K clients in it), the daemon a third. Each
 * run reports CPU time per append: the daemon's by thread (main, writer, readers, the rest), the
 * writers' and the watchers' processes, and the share of the machine's cores busy, so that what
 * the watchers cost the daemon is told apart from the watcher processes' own CPU on a small
 * machine, and the throughput ratio those CPU figures allow where the cores are the limit. The JSON goes to bench/results/<timestamp>-watch.json.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { encodeFrame } from "../src/protocol/frame-codec.js";
import { PROTOCOL_VERSION } from "../src/protocol/messages.js";
import { BenchChild, startTogether } from "./child-process.js";
import { busyShare, machineTimes, threadDelta, threadTimes, THREAD_ROLES, type ThreadRole } from "./cpu-usage.js";
import { DaemonProcess } from "./daemon-process.js";
import { sampleProcess, type ProcessSample } from "./idle-footprint.js";
import { DEFAULT_RESULTS_DIR, workerScript } from "./paths.js";
import { summarizeLatencies, type LatencySummary } from "./stats.js";
import type { WatchFanoutConfig, WatchFanoutReport } from "./workers/watch-fanout.js";

const { values } = parseArgs({
  options: {
    clients: { type: "string", default: "16" },
    seconds: { type: "string", default: "10" },
    "sample-every": { type: "string", default: "7" },
    "stall-seconds": { type: "string", default: "20" },
    out: { type: "string", default: DEFAULT_RESULTS_DIR },
  },
});
const clients = Number(values.clients);
const seconds = Number(values.seconds);
const sampleEvery = Number(values["sample-every"]);
const stallSeconds = Number(values["stall-seconds"]);
/** How long the daemon may take to empty its queue after the writers stop: a bound, not a target. */
const DRAIN_LIMIT_MS = 60_000;

interface Setup {
  db: string;
  daemon: DaemonProcess;
  dir: string;
}

async function fresh(name: string, socketDir: string): Promise<Setup> {
  const dir = mkdtempSync(join(tmpdir(), "sdb-watch-bench-"));
  const db = join(dir, "state.db");
  const daemon = await DaemonProcess.start({ db, socket: join(socketDir, `${name}.sock`), synchronous: "NORMAL", walLimitMb: null });
  return { db, daemon, dir };
}

async function done(setup: Setup): Promise<void> {
  await setup.daemon.stop();
  rmSync(setup.dir, { recursive: true, force: true });
}

function child(role: WatchFanoutConfig["role"], setup: Setup, runSeconds: number): BenchChild<WatchFanoutReport> {
  const config: WatchFanoutConfig = { role, db: setup.db, socket: setup.daemon.socket, clients, seconds: runSeconds, sampleEvery };
  return BenchChild.node<WatchFanoutReport>(workerScript("watch-fanout"), config);
}

/** CPU over a run: ms per append of the daemon's threads by role and of each client process, and the machine's busy share. */
interface RunCpu {
  daemonMsPerAppend: Record<ThreadRole, number> | null;
  daemonTotalMsPerAppend: number | null;
  writersMsPerAppend: number;
  watchersMsPerAppend: number | null;
  machineBusy: number | null;
  /** Appends per group commit (the daemon's writes / batches over the run): CPU per append falls as batches grow. */
  meanBatch: number;
}

function cpuOf(
  appends: number,
  daemon: Record<ThreadRole, number> | null,
  writers: WatchFanoutReport,
  watchers: WatchFanoutReport | null,
  busy: number | null,
  writer: { batches: number; writes: number },
): RunCpu {
  const per = (ms: number) => ms / appends;
  const byRole = daemon === null ? null : (Object.fromEntries(THREAD_ROLES.map((r) => [r, per(daemon[r])])) as Record<ThreadRole, number>);
  return {
    daemonMsPerAppend: byRole,
    daemonTotalMsPerAppend: byRole === null ? null : THREAD_ROLES.reduce((n, r) => n + byRole[r], 0),
    writersMsPerAppend: per(writers.cpuMs),
    watchersMsPerAppend: watchers === null ? null : per(watchers.cpuMs),
    machineBusy: busy,
    meanBatch: writer.batches > 0 ? writer.writes / writer.batches : 0,
  };
}

async function writersAlone(socketDir: string): Promise<{ writers: WatchFanoutReport; cpu: RunCpu }> {
  const setup = await fresh("alone", socketDir);
  try {
    const writers = child("writers", setup, seconds);
    await writers.ready();
    const [threads, machine, before] = [threadTimes(setup.daemon.pid), machineTimes(), (await setup.daemon.stats()).writer];
    await startTogether([writers]);
    const written = await writers.report();
    const [after, writerAfter] = [threadTimes(setup.daemon.pid), (await setup.daemon.stats()).writer];
    const batches = { batches: writerAfter.batches - before.batches, writes: writerAfter.writes - before.writes };
    const cpu = cpuOf(written.count, threadDelta(threads, after), written, null, busyShare(machine, machineTimes()), batches);
    return { writers: written, cpu };
  } finally {
    await done(setup);
  }
}

interface Watched {
  writers: WatchFanoutReport;
  watchers: WatchFanoutReport;
  latency: LatencySummary;
  fromSend: LatencySummary;
  fromStamp: LatencySummary;
  expected: number;
  missing: number;
  cpu: RunCpu;
}

async function withWatchers(socketDir: string): Promise<Watched> {
  const setup = await fresh("watched", socketDir);
  try {
    const watchers = child("watchers", setup, seconds);
    const writers = child("writers", setup, seconds);
    await Promise.all([watchers.ready(), writers.ready()]);
    const [threads, machine, before] = [threadTimes(setup.daemon.pid), machineTimes(), (await setup.daemon.stats()).writer];
    await startTogether([watchers, writers]);
    const written = await writers.report();
    const daemonCpu = threadDelta(threads, threadTimes(setup.daemon.pid));
    const busy = busyShare(machine, machineTimes());
    const writerAfter = (await setup.daemon.stats()).writer;
    const batches = { batches: writerAfter.batches - before.batches, writes: writerAfter.writes - before.writes };
    // Every watcher gets every message: once the daemon's queue is empty, the watchers are told
    // how many events they are owed and wait for them while their count still moves (bounded);
    // what has not come by then is reported missing.
    const expected = written.count * clients;
    const until = Date.now() + DRAIN_LIMIT_MS;
    let stats = await setup.daemon.stats();
    while (Date.now() < until && stats.queueDepth > 0) stats = await setup.daemon.stats();
    watchers.stop(String(expected));
    const watched = await watchers.report();
    const acks = new Map(written.times);
    const sends = new Map(written.sent);
    const latencies: number[] = [];
    const fromSend: number[] = [];
    for (const [id, at] of watched.times) {
      const ack = acks.get(id);
      const sent = sends.get(id);
      if (ack !== undefined) latencies.push(at - ack);
      if (sent !== undefined) fromSend.push(at - sent);
    }
    return {
      writers: written, watchers: watched, latency: summarizeLatencies(latencies), fromSend: summarizeLatencies(fromSend),
      fromStamp: summarizeLatencies(watched.fromStamp), expected, missing: Math.max(0, expected - watched.count),
      cpu: cpuOf(written.count, daemonCpu, written, watched, busy, batches),
    };
  } finally {
    await done(setup);
  }
}

/** A watch on a raw connection that is never read: the daemon must drop its queue, not hold it. */
async function stalledWatcher(socketDir: string, stalled: boolean): Promise<{ samples: ProcessSample[]; writers: WatchFanoutReport }> {
  const setup = await fresh(stalled ? "stalled" : "control", socketDir);
  const socket = connect(setup.daemon.socket);
  try {
    await new Promise<void>((resolve, reject) => socket.once("connect", resolve).once("error", reject));
    socket.write(encodeFrame({ id: 1, op: "hello", args: [{ protocol: PROTOCOL_VERSION }] }));
    if (stalled) socket.write(encodeFrame({ id: 2, op: "watch", args: [{ afterMessageId: 0 }] }));
    socket.pause(); // never read again: the socket's buffers fill, then the daemon's queue for it
    const pid = setup.daemon.pid!;
    const t0 = performance.now();
    const samples: ProcessSample[] = [sampleProcess(pid, t0)];
    const writers = child("writers", setup, stallSeconds);
    await writers.ready();
    await startTogether([writers]);
    const sampler = setInterval(() => samples.push(sampleProcess(pid, t0)), 500);
    const report = await writers.report();
    clearInterval(sampler);
    samples.push(sampleProcess(pid, t0));
    return { samples, writers: report };
  } finally {
    socket.destroy();
    await done(setup);
  }
}

/**
 * On a machine whose cores all the processes share and fill (the bench's 2-core one), throughput
 * is about cores / CPU per append: the ratio the runs' CPU per append allows with every process
 * counted, and with the watcher processes' own CPU left out (what the daemon's side of the feed
 * alone would allow). Null without the daemon's figures.
 */
function cpuCeiling(alone: RunCpu, watched: RunCpu): { all: number; withoutWatchers: number } | null {
  if (alone.daemonTotalMsPerAppend === null || watched.daemonTotalMsPerAppend === null) return null;
  const aloneMs = alone.daemonTotalMsPerAppend + alone.writersMsPerAppend;
  const watchedMs = watched.daemonTotalMsPerAppend + watched.writersMsPerAppend;
  return { all: aloneMs / (watchedMs + (watched.watchersMsPerAppend ?? 0)), withoutWatchers: aloneMs / watchedMs };
}

function cpuRow(cpu: RunCpu): string {
  const d = cpu.daemonMsPerAppend;
  const daemon = d === null ? "n/a" : `${THREAD_ROLES.map((r) => d[r].toFixed(3)).join(" / ")} (${cpu.daemonTotalMsPerAppend!.toFixed(3)})`;
  const watchers = cpu.watchersMsPerAppend === null ? "" : `; watchers ${cpu.watchersMsPerAppend.toFixed(3)}`;
  const busy = cpu.machineBusy === null ? "" : `; cores ${(cpu.machineBusy * 100).toFixed(0)} % busy`;
  return `${daemon}; writers ${cpu.writersMsPerAppend.toFixed(3)}${watchers}${busy}; ${cpu.meanBatch.toFixed(1)} appends a commit`;
}

const socketDir = mkdtempSync(join(tmpdir(), "sdbw-"));
try {
  const log = (line: string) => process.stderr.write(`${line}\n`);
  log(`watch bench: ${clients} writers, ${clients} watchers, ${seconds} s a run`);
  const { writers: alone, cpu: aloneCpu } = await writersAlone(socketDir);
  log(`writers alone: ${(alone.count / alone.seconds).toFixed(0)} appends/s`);
  const watched = await withWatchers(socketDir);
  const ratio = watched.writers.count / watched.writers.seconds / (alone.count / alone.seconds);
  const ceiling = cpuCeiling(aloneCpu, watched.cpu);
  log(`with watchers: ${(watched.writers.count / watched.writers.seconds).toFixed(0)} appends/s (${ratio.toFixed(2)}×)`);
  const stalled = await stalledWatcher(socketDir, true);
  const control = await stalledWatcher(socketDir, false);
  const rss = stalled.samples.map((s) => s.rssKb);
  const half = rss.slice(Math.floor(rss.length / 2));
  const controlRss = control.samples.map((s) => s.rssKb);
  const result = {
    startedAt: new Date().toISOString(),
    options: { clients, seconds, sampleEvery, stallSeconds },
    alone: { appendsPerS: alone.count / alone.seconds, cpu: aloneCpu },
    watched: {
      appendsPerS: watched.writers.count / watched.writers.seconds,
      ratio,
      cpuCeiling: ceiling,
      commitToEventMs: watched.fromStamp,
      latencyMs: watched.latency,
      sendToEventMs: watched.fromSend,
      expected: watched.expected,
      delivered: watched.watchers.count,
      missing: watched.missing,
      drained: watched.watchers.drained,
      disorders: watched.watchers.disorders,
      resyncs: watched.watchers.resyncs,
      cpu: watched.cpu,
    },
    stalled: {
      appendsPerS: stalled.writers.count / stalled.writers.seconds,
      rssKb: { first: rss[0], max: Math.max(...rss), last: rss.at(-1), secondHalfMin: Math.min(...half), secondHalfMax: Math.max(...half) },
      samples: stalled.samples,
    },
    noWatcher: {
      appendsPerS: control.writers.count / control.writers.seconds,
      rssKb: { first: controlRss[0], max: Math.max(...controlRss), last: controlRss.at(-1) },
      samples: control.samples,
    },
  };
  const table = [
    "| figure | value | target |",
    "|---|---|---|",
    `| writers alone (K = ${clients}) | ${result.alone.appendsPerS.toFixed(0)} appends/s | |`,
    `| writers beside ${clients} watchers | ${result.watched.appendsPerS.toFixed(0)} appends/s (${ratio.toFixed(2)}×) | ≥ 0.9× |`,
    `| the ratio the CPU per append allows where the cores are the limit: all processes / without the watcher processes' own | ${ceiling === null ? "n/a" : `${ceiling.all.toFixed(2)}× / ${ceiling.withoutWatchers.toFixed(2)}×`} | |`,
    `| commit-to-event p50 / p99 / max (from the message's timestamp, taken by the writer thread just before COMMIT) | ${watched.fromStamp.p50.toFixed(2)} / ${watched.fromStamp.p99.toFixed(2)} / ${watched.fromStamp.max.toFixed(1)} ms (${watched.fromStamp.count} samples) | ≤ 2 / ≤ 10 ms |`,
    `| send-to-event p50 / p99 / max (an upper bound) | ${watched.fromSend.p50.toFixed(2)} / ${watched.fromSend.p99.toFixed(2)} / ${watched.fromSend.max.toFixed(1)} ms (${watched.fromSend.count} samples) | |`,
    `| ack-to-event p50 / p99 / max (negative: before the writer's reply) | ${watched.latency.p50.toFixed(2)} / ${watched.latency.p99.toFixed(2)} / ${watched.latency.max.toFixed(1)} ms | |`,
    `| events expected / delivered / missing / out of order / resyncs | ${watched.expected} / ${watched.watchers.count} / ${watched.missing}${watched.watchers.drained ? "" : " (the count stopped moving)"} / ${watched.watchers.disorders} / ${watched.watchers.resyncs} | 0 missing, 0 out of order |`,
    `| CPU ms per append, writers alone: daemon main / writer / readers / other; writer clients | ${cpuRow(aloneCpu)} | |`,
    `| CPU ms per append, beside ${clients} watchers: the same; watcher clients | ${cpuRow(watched.cpu)} | |`,
    `| daemon RSS with a stalled watcher (${stallSeconds} s of appends) | first ${rss[0]} KiB, max ${Math.max(...rss)} KiB, last ${rss.at(-1)} KiB; second half ${Math.min(...half)}–${Math.max(...half)} KiB | flat |`,
    `| daemon RSS, the same run with no watcher | first ${controlRss[0]} KiB, max ${Math.max(...controlRss)} KiB, last ${controlRss.at(-1)} KiB | |`,
  ];
  process.stdout.write(`${table.join("\n")}\n`);
  mkdirSync(values.out!, { recursive: true });
  const file = join(values.out!, `${result.startedAt.replace(/[:.]/g, "-")}-watch.json`);
  writeFileSync(file, `${JSON.stringify(result, null, 1)}\n`);
  log(`results: ${file}`);
} finally {
  rmSync(socketDir, { recursive: true, force: true });
}

/**
 * The report of a run: Markdown tables on stdout (they paste into the README as they are), and
 * `<out>/<timestamp>.json` with the charts next to it.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { BenchResult } from "./bench-result.js";
import { writeCharts } from "./charts.js";
import { machineLine } from "./machine.js";
import { MODES } from "./modes.js";
import { READ_OPS, SLOW_SEARCHERS, type ReadSideResult, type ReadSizeResult } from "./read-side.js";
import { VIAS } from "./served-copy.js";
import { spread, type Spread } from "./stats.js";
import { idleFootprintTable } from "./idle-footprint.js";
import { THREAD_ROLES } from "./cpu-usage.js";
import type { IdleOnlyResult } from "./bench-result.js";

/** Three significant-ish digits: 12345, 123, 12.3, 1.23, 0.123. */
export function num(n: number | null | undefined): string {
  if (n === null || n === undefined || !Number.isFinite(n)) return "—";
  const a = Math.abs(n);
  if (a >= 100) return n.toFixed(0);
  if (a >= 10) return n.toFixed(1);
  if (a >= 1) return n.toFixed(2);
  return n.toFixed(3);
}

function int(n: number): string {
  return n.toFixed(0);
}

function percent(n: number): string {
  return `${(100 * n).toFixed(0)}%`;
}

function cores(n: number): string {
  return n.toFixed(2);
}

/** Cores other programs kept busy (median over the runs) above which the figures are disturbed. */
const DISTURBED_CORES = 0.3;
/** Share of the cores' time the host took (median over the runs) above which the figures are disturbed. */
const DISTURBED_STOLEN = 0.05;

function disturbance(result: BenchResult): string[] {
  const warnings: string[] = [];
  const others = spread(result.convoy.runs.map((r) => r.cpu.otherCores))?.median;
  if (others !== undefined && others >= DISTURBED_CORES) {
    const load = result.machine.loadAverage.map((n) => n.toFixed(1)).join(", ");
    warnings.push(
      `**Warning: this machine was not quiet.** Other processes kept a median of ${others.toFixed(2)} of its ${result.machine.cores} cores busy during the convoy runs (load average at the start: ${load}). Figures and ratios are disturbed; run again on a quiet machine.`,
    );
  }
  const stolen = spread(result.convoy.runs.map((r) => r.cpu.stolen ?? null))?.median;
  if (stolen !== undefined && stolen >= DISTURBED_STOLEN) {
    warnings.push(
      `**Warning: the host took ${percent(stolen)} of this virtual machine's core time (steal, median over the convoy runs).** Every wake-up and thread hop is dearer while it does; compare ratios within this run, not absolute figures across runs.`,
    );
  }
  return warnings;
}

/** The median, and its range when there was more than one repetition. */
function med(s: Spread | null, digits: (n: number) => string = num): string {
  if (s === null) return "—";
  return s.n > 1 ? `${digits(s.median)} (${digits(s.min)}–${digits(s.max)})` : digits(s.median);
}

function markdownTable(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(" | ")} |`;
  return [line(header), `|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`, ...rows.map(line)].join("\n");
}

/** The fsync column: the disk as it is, or the delay every process's fsync got on top. */
function fsyncCell(ms: number): string {
  return ms === 0 ? "native" : `+${ms} ms`;
}

function convoyTable(result: BenchResult): string {
  const rows = result.convoy.summary.map((c) => [
    fsyncCell(c.fsyncDelayMs),
    c.mode,
    MODES[c.mode].clients === "one" ? "1" : String(c.k),
    med(c.appendsPerS),
    med(c.p50),
    med(c.p99),
    med(c.p999),
    med(c.max),
    String(c.failures),
    med(c.fairness),
    med(c.commits, int),
    med(c.meanBatchSize),
    c.retries === null ? "n/a" : med(c.retries, int),
    `${med(c.machineBusy, percent)}: ${med(c.clientCores, cores)} / ${med(c.daemonCores, cores)} / ${med(c.otherCores, cores)}`,
    med(c.stolen, percent),
    med(c.cpuUsPerAppend, int),
    `${med(c.clientsWaitShare, percent)} / ${med(c.daemonWaitShare, percent)}`,
    c.rowsExact ? `exact (${c.rowsChecked})` : "MISMATCH",
  ]);
  return markdownTable(
    ["fsync", "mode", "K", "appends/s", "p50 ms", "p99 ms", "p99.9 ms", "max ms", "fail", "fairness", "commits", "batch", "retries", "cpu: clients / daemon / other", "stolen", "cpu µs/append", "wait for a core: clients / daemon", "rows"],
    rows,
  );
}

/** Where the CPU of an append goes: the clients, the daemon, and the daemon's threads (issue 27). */
function cpuTable(result: BenchResult): string {
  const rows = result.convoy.summary
    .filter((c) => c.clientsUsPerAppend !== undefined && c.clientsUsPerAppend !== null)
    .map((c) => {
      const threads = c.daemonThreadsUsPerAppend ?? null;
      return [
        fsyncCell(c.fsyncDelayMs),
        c.mode,
        MODES[c.mode].clients === "one" ? "1" : String(c.k),
        med(c.cpuUsPerAppend, int),
        med(c.clientsUsPerAppend ?? null, int),
        med(c.daemonUsPerAppend ?? null, int),
        ...THREAD_ROLES.map((role) => med(threads?.[role] ?? null, int)),
      ];
    });
  return markdownTable(
    ["fsync", "mode", "K", "cpu µs/append", "clients", "daemon", "daemon: main thread", "writer", "readers", "other (GC, compiler, libuv)"],
    rows,
  );
}

function ratioTable(result: BenchResult): string {
  const rows = result.convoy.ratios.map((r) => [
    fsyncCell(r.fsyncDelayMs),
    String(r.k), med(r.throughput), med(r.p99), med(r.max), med(r.pingThroughput), med(r.appendsVsPing), med(r.keysThroughput), med(r.keysP50),
  ]);
  const table = markdownTable(
    [
      "fsync", "K", "daemon/jitter appends/s", "daemon/jitter p99", "daemon/jitter max", "daemon-ping/jitter calls/s", "daemon/daemon-ping",
      "keys: daemon/daemon-keyless appends/s", "keys: daemon/daemon-keyless p50",
    ],
    rows,
  );
  return `${table}\n\ndaemon-pipelined / ceiling appends/s (${fsyncCell(result.convoy.fsyncDelaysMs[0] ?? 0)}): ${med(result.convoy.pipelinedVsCeiling)}`;
}

function loneAppendTable(result: BenchResult): string {
  const rows = result.convoy.loneAppend.map((l) => [
    fsyncCell(l.fsyncDelayMs), med(l.appendMs), med(l.roundTripMs), med(l.sqlMs), med(l.commitMs), med(l.hopsMs),
  ]);
  const table = markdownTable(
    ["fsync", "append p50 ms", "round trip (daemon-ping)", "SQL (writer)", "COMMIT (WAL write + fsync)", "the rest: hops to the writer and back"],
    rows,
  );
  return (
    `${table}\n\nOne client appending one message at a time through the daemon (K = 1): the bare round trip is ` +
    "daemon-ping's p50 (client → socket, decode, reply write, client); SQL and COMMIT are the writer's own lock-hold and " +
    "commit p50s; the rest is the append's p50 minus those: the hops to the writer thread and back, and queueing."
  );
}

function targetTable(result: BenchResult): string {
  const rows = result.targets.map((t) => [
    String(t.issue),
    t.target,
    t.k === null ? "" : String(t.k),
    t.fsyncDelayMs === null ? "" : fsyncCell(t.fsyncDelayMs),
    t.value !== null && Number.isInteger(t.value) ? String(t.value) : num(t.value),
    `${t.direction} ${t.bound}`,
    t.met ? "met" : "NOT MET",
  ]);
  return markdownTable(["issue", "target", "K", "fsync", "measured (median)", "target", ""], rows);
}

function readTable(size: ReadSizeResult, read: ReadSideResult): string {
  const conditions = VIAS.flatMap((via) => (["idle", "writing"] as const).map((load) => ({ via, load })));
  const header = ["operation", ...conditions.map((c) => `${c.via} ${c.load} p50 / p99 ms`)];
  const rows = READ_OPS.map((op) => {
    const first = size.latencies.find((l) => l.op === op);
    const label = first?.query === null || first === undefined ? op : `${op} ${first.query} (${first.rows} rows)`;
    return [
      label,
      ...conditions.map((c) => {
        const l = size.latencies.find((x) => x.op === op && x.via === c.via && x.load === c.load);
        return l === undefined ? "—" : `${num(l.p50)} / ${num(l.p99)}`;
      }),
    ];
  });
  rows.push([
    "exportAll messages/s",
    ...conditions.map((c) => {
      const e = size.exports.find((x) => x.via === c.via && x.load === c.load);
      return e?.ended === true ? `${num(e.messagesPerS)} (ended by the daemon, TIMEOUT, after ${e.messages} messages)` : num(e?.messagesPerS);
    }),
  ]);
  const points = size.pointReads
    .map((p) => `${p.via} ${p.background} ${num(p.p50)} / ${num(p.p99)} ms${p.background === "slow-searches" ? ` (${p.searches} searches meanwhile)` : ""}`)
    .join("; ");
  const writers = size.writers.map((w) => `${w.via} ${num(w.appendsPerS)} appends/s (p99 ${num(w.p99)} ms, ${w.failures} failures)`).join("; ");
  const c = size.corpus;
  const cjk = c.cjkIndex;
  const index =
    `CJK index: ${num(cjk.bytes / 2 ** 20)} MiB for the ${cjk.indexedMessages} messages with CJK ` +
    `(${num(cjk.bytes / c.messages)} bytes per message of the file, ${num((100 * cjk.bytes) / c.bytes)} % of it) ` +
    `(the FTS5 index of all messages: ${num(cjk.ftsBytes / 2 ** 20)} MiB), built from nothing in ${num(cjk.buildS)} s.`;
  const timing = `Each operation in each condition runs ${num(read.warmupSeconds)} s unmeasured (a process that has served a while, not its first calls), then ${num(read.opSeconds)} s timed.`;
  return `Corpus: ${c.messages} messages in ${c.sessions} sessions (${num(c.bytes / 2 ** 20)} MiB). ${index} ${timing} Flat-out writer: ${writers}. Point read (getSession) p50 / p99 beside ${SLOW_SEARCHERS} clients running 4 KB OR-of-prefixes searches back to back: ${points}.\n\n${markdownTable(header, rows)}`;
}

function walTable(result: BenchResult): string {
  const wal = result.wal!;
  const rows = wal.series.map((s) => [
    s.via,
    num(s.maxMib),
    num(s.finalMib),
    num(s.writerAppendsPerS),
    `${s.readerLoops} (p50 ${num(s.readerP50)} ms)`,
    s.checkpoints === null ? "n/a" : `${s.checkpoints.passive} passive, ${s.checkpoints.truncate} truncate`,
  ]);
  const limit = wal.walLimitMb === null ? "the daemon's default WAL bound" : `the daemon's WAL bound at ${wal.walLimitMb} MiB`;
  return (
    `${wal.seconds} s, corpus of ${wal.corpusMessages} messages, reader looping ${wal.op} ${wal.query}, ${limit}.\n\n` +
    markdownTable(["via", "max -wal MiB", "final -wal MiB", "writer appends/s", "reader searches", "daemon checkpoints"], rows)
  );
}

export function formatReport(result: BenchResult): string {
  const parts = [
    `## sessiondb benchmark (${result.options.preset})`,
    machineLine(result.machine, result.startedAt),
    `fsync of a 16 KiB write in the work directory (ms), before / after the suite: p50 ${num(result.fsyncMs.before.p50)} / ${num(result.fsyncMs.after.p50)}, p99 ${num(result.fsyncMs.before.p99)} / ${num(result.fsyncMs.after.p99)}, max ${num(result.fsyncMs.before.max)} / ${num(result.fsyncMs.after.max)}.`,
    `${result.options.reps} repetition(s) × ${result.options.seconds} s per run, modes alternating; messages of ~${Math.round(result.messageChars)} chars; synchronous=${result.options.synchronous}; medians (range over repetitions).`,
    ...disturbance(result),
    "### Convoy: K processes appending one message at a time",
    convoyTable(result),
    "cpu: share of the machine busy during the run: cores used by the clients / the daemon / everything else. " +
      "cpu µs/append: CPU time of the clients and the daemon together, per append (per call for daemon-ping). " +
      "wait for a core: of the time their threads were ready to run, the share they waited for a core (Linux schedstat); " +
      "a high share means the machine's cores, not the database, set the pace. " +
      "daemon-ping's calls are pings: the same round trip with no database work, the most any daemon client can get here.",
    "### CPU per append: clients, daemon, the daemon's threads",
    cpuTable(result),
    "CPU time per append (per call for daemon-ping), µs: all client processes together, the daemon's process, and the daemon's " +
      "threads (Linux schedstat; the workers name theirs sdb-writer, sdb-reader): its event loop (sockets, frames, dispatch), the " +
      "writer (SQL, COMMIT, fsync), the readers, and the rest (V8's garbage collector and compiler, libuv's pool). A mode with two daemons shows no split.",
    ...(result.convoy.skipped.length > 0 ? [`Skipped: ${result.convoy.skipped.map((s) => `${s.mode} (${s.reason})`).join(", ")}`] : []),
    "### Ratios (within each repetition)",
    ratioTable(result),
    ...(result.convoy.loneAppend.length > 0 ? ["### Where a lone append's time goes", loneAppendTable(result)] : []),
    ...(result.targets.length > 0 ? ["### Targets", targetTable(result)] : []),
    ...(result.read?.sizes ?? []).flatMap((size) => [`### Read side, ${size.corpus.messages} messages`, readTable(size, result.read!)]),
    ...(result.wal !== null ? ["### WAL growth", walTable(result)] : []),
    ...(result.idle != null ? ["### Idle daemon", idleFootprintTable(result.idle)] : []),
    `Suite time: ${num(result.durationS)} s.`,
  ];
  return `${parts.join("\n\n")}\n`;
}

/** Writes the JSON and the charts; returns the paths written. */
export async function writeResults(result: BenchResult, outDir: string): Promise<string[]> {
  mkdirSync(outDir, { recursive: true });
  const stem = result.startedAt.replace(/[:.]/g, "-");
  const json = join(outDir, `${stem}.json`);
  writeFileSync(json, `${JSON.stringify(result, null, 1)}\n`);
  return [json, ...(await writeCharts(result, outDir, stem))];
}

/** `--idle-only`'s report. */
export function formatIdleReport(result: IdleOnlyResult): string {
  return `${[`## sessiondb idle footprint (${result.options.preset})`, machineLine(result.machine, result.startedAt), idleFootprintTable(result.idle)].join("\n\n")}\n`;
}

/** `--idle-only`'s JSON; returns its path. */
export function writeIdleResult(result: IdleOnlyResult, outDir: string): string {
  mkdirSync(outDir, { recursive: true });
  const json = join(outDir, `${result.startedAt.replace(/[:.]/g, "-")}-idle.json`);
  writeFileSync(json, `${JSON.stringify(result, null, 1)}\n`);
  return json;
}

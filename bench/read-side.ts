/**
 * The read side: on a generated corpus, the latency of four FTS searches (a rare term, a common
 * term, a phrase, a CJK substring) and of the rich listing, and the throughput of exportAll,
 * each with the database idle and while a writer appends flat out, in direct mode and through
 * the daemon. In direct mode the reads run in this process; the writer is always its own process.
 */
import { join } from "node:path";
import { errorCode } from "../src/errors.js";
import { openSessionDB, type OpenOptions, type SessionDB } from "../src/index.js";
import type { BenchChild } from "./child-process.js";
import { ensureCorpus, type Corpus } from "./corpus.js";
import { ServedCopy, VIAS, type Via } from "./served-copy.js";
import { summarizeLatencies } from "./stats.js";
import type { WriterReport } from "./workers/protocol.js";

export interface ReadSideOptions {
  sizes: number[];
  seed: number;
  cacheDir: string;
  workDir: string;
  socketDir: string;
  /** Time spent measuring each operation in each condition. */
  opSeconds: number;
  /** Time each operation in each condition runs, unmeasured, before that. */
  warmupSeconds: number;
  synchronous: "FULL" | "NORMAL";
  walLimitMb: number | null;
  messagesFile: string;
}

export const READ_OPS = ["search-rare", "search-common", "search-phrase", "search-cjk", "search-cjk-short", "list-rich-50"] as const;
export type ReadOp = (typeof READ_OPS)[number];
export type Load = "idle" | "writing";

export interface ReadLatency {
  via: Via;
  load: Load;
  op: ReadOp;
  /** The search as typed; null for the listing. */
  query: string | null;
  n: number;
  p50: number;
  p99: number;
  max: number;
  /** Rows the operation returned. */
  rows: number;
}

export interface ExportFigures {
  via: Via;
  load: Load;
  seconds: number;
  sessions: number;
  messages: number;
  messagesPerS: number;
  /**
   * The daemon ended the export (TIMEOUT): under the flat-out writer its snapshot held the WAL past
   * the daemon's limit (as at 2,000,000 messages), or a page waited past its deadline; the figures
   * cover what it had received.
   */
  ended: boolean;
}

export interface WriterFigures {
  via: Via;
  appendsPerS: number;
  p99: number;
  failures: number;
}

/** A point read's latency with the readers idle, and while clients run slow searches back to back. */
export interface PointReadFigures {
  via: Via;
  background: "idle" | "slow-searches";
  n: number;
  p50: number;
  p99: number;
  max: number;
  /** Slow searches completed meanwhile. */
  searches: number;
}

export interface ReadSizeResult {
  corpus: Omit<Corpus, "path">;
  latencies: ReadLatency[];
  /** `getSession` beside slow searches: whether they starve it. */
  pointReads: PointReadFigures[];
  exports: ExportFigures[];
  /** The flat-out writer of the "writing" condition. */
  writers: WriterFigures[];
}

export interface ReadSideResult {
  opSeconds: number;
  warmupSeconds: number;
  sizes: ReadSizeResult[];
}

/** Every operation runs at least this often, however slow, so p99 means something. */
const MIN_SAMPLES = 5;
const MAX_SAMPLES = 5000;
/** Searches run back to back, each by a client of its own, while the point reads are measured. */
export const SLOW_SEARCHERS = 4;
/** A 4 KB search of OR-ed two-letter prefixes: it matches nearly every message, so it is slow. */
const SLOW_QUERY = (() => {
  const terms: string[] = [];
  for (let i = 0; terms.join(" OR ").length < 4000; i++) terms.push(`${(i % 1296).toString(36).padStart(2, "a")}*`);
  return terms.join(" OR ");
})();
/** Lets the writer get going before the "writing" measurements. */
const WRITER_WARMUP_MS = 300;

const SEARCHES: Record<Exclude<ReadOp, "list-rich-50">, (queries: Corpus["queries"]) => string> = {
  "search-rare": (q) => q.rare,
  "search-common": (q) => q.common,
  "search-phrase": (q) => q.phrase,
  "search-cjk": (q) => q.cjk,
  // Two characters: too short for a trigram, so the walk goes through every indexed message (those with CJK).
  "search-cjk-short": (q) => [...q.cjk].slice(0, 2).join(""),
};

export async function runReadSide(options: ReadSideOptions, log: (line: string) => void): Promise<ReadSideResult> {
  const sizes: ReadSizeResult[] = [];
  for (const [index, size] of options.sizes.entries()) {
    const corpus = ensureCorpus(size, options.seed, options.cacheDir);
    log(
      `read: corpus of ${size} messages, ${corpus.sessions} sessions, ${(corpus.bytes / 2 ** 20).toFixed(0)} MiB` +
        (corpus.generatedInS === null ? " (cached)" : ` (generated in ${corpus.generatedInS.toFixed(1)} s)`),
    );
    const result: ReadSizeResult = { corpus: withoutPath(corpus), latencies: [], pointReads: [], exports: [], writers: [] };
    // Alternate which way goes first from one size to the next.
    const vias = index % 2 === 0 ? VIAS : [...VIAS].reverse();
    for (const via of vias) await measureVia(corpus, via, options, result, log);
    sizes.push(result);
  }
  return { opSeconds: options.opSeconds, warmupSeconds: options.warmupSeconds, sizes };
}

function withoutPath(corpus: Corpus): Omit<Corpus, "path"> {
  const { path: _path, ...rest } = corpus;
  return rest;
}

async function measureVia(corpus: Corpus, via: Via, options: ReadSideOptions, result: ReadSizeResult, log: (line: string) => void) {
  const copy = await ServedCopy.open(corpus, {
    via,
    dir: join(options.workDir, `read-${corpus.messages}-${via}`),
    socket: join(options.socketDir, `r-${via}.sock`),
    synchronous: options.synchronous,
    walLimitMb: options.walLimitMb,
  });
  let writer: BenchChild<WriterReport> | null = null;
  let db: SessionDB | null = null;
  try {
    db = await openSessionDB(copy.openOptions);
    await measureAll(db, corpus, via, "idle", options, result);
    writer = copy.flatOutWriter(options.messagesFile);
    await writer.ready();
    writer.go();
    await new Promise((resolve) => setTimeout(resolve, WRITER_WARMUP_MS));
    await measureAll(db, corpus, via, "writing", options, result);
    writer.stop();
    const report = await writer.report();
    const elapsedS = Math.max(1e-3, (report.endMs - report.startMs) / 1000);
    result.writers.push({ via, appendsPerS: report.appends / elapsedS, p99: summarizeLatencies(report.latenciesMs).p99, failures: report.failures });
    // In direct mode the searches would run on this thread, in turn with the point reads: only the daemon's figures mean something.
    if (via === "daemon") await measurePointReads(db, copy.openOptions, via, options, result);
    log(`read: ${corpus.messages} messages via ${via}: done (writer ${(report.appends / elapsedS).toFixed(0)} appends/s)`);
  } finally {
    writer?.kill();
    await db?.close();
    // The figures are taken by now: a daemon that does not stop cleanly is said, and they are kept.
    await copy.close().catch((err: unknown) => log(`read: ${corpus.messages} messages via ${via}: ${String(err).split("\n")[0]}`));
  }
}

/** How long each operation is timed, after how long a warm-up. */
type Timing = Pick<ReadSideOptions, "opSeconds" | "warmupSeconds">;

async function measureAll(db: SessionDB, corpus: Corpus, via: Via, load: Load, timing: Timing, result: ReadSizeResult) {
  for (const op of READ_OPS) {
    const query = op === "list-rich-50" ? null : SEARCHES[op](corpus.queries);
    const run = query === null ? () => db.listSessionsRich({ limit: 50 }) : () => db.searchMessages(query);
    const { latencies, rows } = await sample(run, timing);
    const s = summarizeLatencies(latencies);
    result.latencies.push({ via, load, op, query, n: s.count, p50: s.p50, p99: s.p99, max: s.max, rows });
  }
  result.exports.push({ via, load, ...(await exportPass(db)) });
}

/** `getSession` alone, then while `SLOW_SEARCHERS` clients search back to back. */
async function measurePointReads(db: SessionDB, openOptions: OpenOptions, via: Via, timing: Timing, result: ReadSizeResult) {
  const id = (await db.listSessionsRich({ limit: 1 }))[0]?.id;
  if (id === undefined) return;
  const pointRead = async () => [await db.getSession(id)];
  const idle = summarizeLatencies((await sample(pointRead, timing)).latencies);
  result.pointReads.push({ via, background: "idle", n: idle.count, p50: idle.p50, p99: idle.p99, max: idle.max, searches: 0 });
  const searchers = await Promise.all(Array.from({ length: SLOW_SEARCHERS }, () => openSessionDB(openOptions)));
  let searching = true;
  let searches = 0;
  const loops = searchers.map(async (searcher) => {
    while (searching) {
      try {
        await searcher.searchMessages(SLOW_QUERY, { limit: 20 });
        searches++;
      } catch (err) {
        // Stopped at its deadline (a loaded machine, a large corpus): it kept a reader busy all the same.
        if (errorCode(err) !== "TIMEOUT") throw err;
      }
    }
  });
  try {
    const busy = summarizeLatencies((await sample(pointRead, timing)).latencies);
    result.pointReads.push({ via, background: "slow-searches", n: busy.count, p50: busy.p50, p99: busy.p99, max: busy.max, searches });
  } finally {
    searching = false;
    await Promise.all(loops);
    await Promise.all(searchers.map((s) => s.close()));
  }
}

/**
 * Unmeasured calls for the warm-up time (one at least), then measured calls until the time is up
 * (at least MIN_SAMPLES, at most MAX_SAMPLES).
 */
async function sample(run: () => Promise<unknown[]>, timing: Timing): Promise<{ latencies: number[]; rows: number }> {
  let rows = (await run()).length;
  const warm = performance.now() + timing.warmupSeconds * 1000;
  while (performance.now() < warm) await run();
  const latencies: number[] = [];
  const until = performance.now() + timing.opSeconds * 1000;
  while (latencies.length < MIN_SAMPLES || (latencies.length < MAX_SAMPLES && performance.now() < until)) {
    const t0 = performance.now();
    rows = (await run()).length;
    latencies.push(performance.now() - t0);
  }
  return { latencies, rows };
}

async function exportPass(db: SessionDB): Promise<Omit<ExportFigures, "via" | "load">> {
  const t0 = performance.now();
  let sessions = 0;
  let messages = 0;
  let ended = false;
  try {
    for await (const session of db.exportAll()) {
      sessions++;
      messages += session.messages.length;
    }
  } catch (err) {
    if (errorCode(err) !== "TIMEOUT") throw err;
    ended = true;
  }
  const seconds = (performance.now() - t0) / 1000;
  return { seconds, sessions, messages, messagesPerS: messages / seconds, ended };
}

/** The search with the highest idle p50 in direct mode on the smallest corpus: the WAL check loops it. */
export function slowestSearch(result: ReadSideResult): { op: ReadOp; query: string } | null {
  const first = result.sizes[0];
  if (first === undefined) return null;
  const candidates = first.latencies.filter((l) => l.via === "direct" && l.load === "idle" && l.query !== null);
  const slowest = candidates.sort((a, b) => b.p50 - a.p50)[0];
  return slowest === undefined ? null : { op: slowest.op, query: slowest.query! };
}

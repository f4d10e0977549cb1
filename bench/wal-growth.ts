/**
 * WAL size over time under a flat-out writer plus a reader looping the slowest search, with
 * and without the daemon. Without it (a direct-mode writer process and a direct-mode reader
 * process), back-to-back read snapshots keep checkpoints from ever resetting the WAL; the
 * daemon owns checkpointing and must keep the `-wal` file bounded. Sampled every 100 ms.
 */
import { join } from "node:path";
import { BenchChild } from "./child-process.js";
import type { Corpus } from "./corpus.js";
import { walBytes } from "./database-file.js";
import { workerScript } from "./paths.js";
import { ServedCopy, VIAS, type Via } from "./served-copy.js";
import { summarizeLatencies } from "./stats.js";
import type { SearchLoopConfig, SearchLoopReport } from "./workers/protocol.js";

const SAMPLE_EVERY_MS = 100;

export interface WalOptions {
  corpus: Corpus;
  /** The read operation looped (its query below). */
  op: string;
  query: string;
  seconds: number;
  workDir: string;
  socketDir: string;
  synchronous: "FULL" | "NORMAL";
  walLimitMb: number | null;
  messagesFile: string;
}

export interface WalSeries {
  via: Via;
  /** Seconds since the start, and the `-wal` size in MiB. */
  samples: Array<{ t: number; mib: number }>;
  maxMib: number;
  finalMib: number;
  writerAppendsPerS: number;
  readerLoops: number;
  readerP50: number;
  /** The daemon's checkpoints during the run (null without the daemon). */
  checkpoints: { passive: number; truncate: number } | null;
}

export interface WalResult {
  corpusMessages: number;
  op: string;
  query: string;
  seconds: number;
  /** The daemon's TRUNCATE bound; null for the daemon's default. */
  walLimitMb: number | null;
  series: WalSeries[];
}

export async function runWalGrowth(options: WalOptions, log: (line: string) => void): Promise<WalResult> {
  const series: WalSeries[] = [];
  for (const via of [...VIAS].reverse()) {
    const s = await measure(via, options);
    log(`wal: via ${via}: max ${s.maxMib.toFixed(1)} MiB, final ${s.finalMib.toFixed(1)} MiB (writer ${s.writerAppendsPerS.toFixed(0)} appends/s, reader ${s.readerLoops} searches)`);
    series.push(s);
  }
  return { corpusMessages: options.corpus.messages, op: options.op, query: options.query, seconds: options.seconds, walLimitMb: options.walLimitMb, series };
}

async function measure(via: Via, options: WalOptions): Promise<WalSeries> {
  const copy = await ServedCopy.open(options.corpus, {
    via,
    dir: join(options.workDir, `wal-${via}`),
    socket: join(options.socketDir, `w-${via}.sock`),
    synchronous: options.synchronous,
    walLimitMb: options.walLimitMb,
  });
  const writer = copy.flatOutWriter(options.messagesFile);
  const readerConfig: SearchLoopConfig = { db: copy.db, socket: copy.daemon?.socket ?? null, query: options.query, seconds: options.seconds + 60 };
  const reader = BenchChild.node<SearchLoopReport>(workerScript("search-loop"), readerConfig);
  let timer: NodeJS.Timeout | null = null;
  try {
    await Promise.all([writer.ready(), reader.ready()]);
    const before = await copy.daemon?.stats();
    const samples: WalSeries["samples"] = [];
    const t0 = performance.now();
    const take = () => samples.push({ t: (performance.now() - t0) / 1000, mib: walBytes(copy.db) / 2 ** 20 });
    writer.go();
    reader.go();
    take();
    timer = setInterval(take, SAMPLE_EVERY_MS);
    await new Promise((resolve) => setTimeout(resolve, options.seconds * 1000));
    clearInterval(timer);
    take();
    writer.stop();
    reader.stop();
    const [written, read] = await Promise.all([writer.report(), reader.report()]);
    const after = await copy.daemon?.stats();
    return {
      via,
      samples,
      maxMib: Math.max(...samples.map((s) => s.mib)),
      finalMib: samples[samples.length - 1]?.mib ?? 0,
      writerAppendsPerS: written.appends / Math.max(1e-3, (written.endMs - written.startMs) / 1000),
      readerLoops: read.loops,
      readerP50: summarizeLatencies(read.latenciesMs).p50,
      checkpoints:
        before === undefined || after === undefined
          ? null
          : {
              passive: after.writer.checkpoints.passive - before.writer.checkpoints.passive,
              truncate: after.writer.checkpoints.truncate - before.writer.checkpoints.truncate,
            },
    };
  } finally {
    if (timer !== null) clearInterval(timer);
    writer.kill();
    reader.kill();
    await copy.close();
  }
}

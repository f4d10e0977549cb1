import { statSync } from "node:fs";
import type { Command } from "commander";
import type { DaemonStats } from "../../protocol/control.js";
import { prometheusText } from "../../protocol/prometheus-text.js";
import type { SourceCount } from "../../session-db.js";
import { duration, oneLine, plural, size } from "../format.js";
import { withStore } from "../open-store.js";
import type { Output } from "../output.js";

/** `--json` of `stats`. */
export interface StatsReport {
  database: string;
  fileBytes: number;
  walBytes: number;
  sessions: number;
  messages: number;
  sources: SourceCount[];
  /** The daemon's `stats` when the command went through one, else null. */
  daemon: DaemonStats | null;
}

function fileSize(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}

export function registerStats(program: Command): void {
  program
    .command("stats")
    .description("sessions, messages, file and WAL sizes, sources, and the daemon's figures when one serves")
    .option("--prometheus", "print the Prometheus text format instead (for node_exporter's textfile collector): the daemon's health figures and the file's")
    .action(async (opts: { prometheus?: boolean }, command: Command) => {
      await withStore(command, { mustExist: true }, async ({ db, daemon, path }, out) => {
        if (opts.prometheus === true) {
          const file = { fileBytes: fileSize(path), walBytes: fileSize(db.files.wal), sessions: await db.sessionCount(), messages: await db.messageCount() };
          process.stdout.write(prometheusText(daemon === null ? null : await daemon.health(), file));
          return;
        }
        const report: StatsReport = {
          database: path,
          fileBytes: fileSize(path),
          walBytes: fileSize(db.files.wal),
          sessions: await db.sessionCount(),
          messages: await db.messageCount(),
          sources: await db.sourceCounts(),
          daemon: daemon === null ? null : await daemon.stats(),
        };
        out.result(report, () => printStats(out, report));
      });
    });
}

function printStats(out: Output, r: StatsReport): void {
  const { c } = out;
  const label = (text: string) => c.bold(text.padEnd(10));
  out.line(`${label("database")}${r.database}`);
  out.line(`${label("size")}${size(r.fileBytes)} (WAL ${size(r.walBytes)})`);
  out.line(`${label("sessions")}${r.sessions}`);
  out.line(`${label("messages")}${r.messages}`);
  const width = Math.max(0, ...r.sources.map((s) => [...oneLine(s.source)].length));
  r.sources.forEach((s, i) => {
    const counts = `${plural(s.sessions, "session")}, ${plural(s.messages, "message")}`;
    out.line(`${label(i === 0 ? "sources" : "")}${oneLine(s.source).padEnd(width)}  ${counts}`);
  });
  const d = r.daemon;
  if (d === null) {
    out.line(`${label("daemon")}${c.dim("none (this command opened the file directly)")}`);
    return;
  }
  out.line(
    `${label("daemon")}pid ${d.pid}, up ${duration(d.uptimeS)}, ${plural(d.clients, "client")}, ` +
      `${d.queueDepth} queued, WAL ${size(d.walBytes)}`,
  );
  const w = d.writer;
  out.line(
    `${label("writer")}${plural(w.writes, "write")} in ${plural(w.batches, "commit")} ` +
      `(mean batch ${w.meanBatchSize.toFixed(1)}, max ${w.maxBatchSize}), ` +
      `commit p50 ${w.commitMs.p50.toFixed(1)} ms, p99 ${w.commitMs.p99.toFixed(1)} ms, ` +
      `checkpoints ${w.checkpoints.passive} passive / ${w.checkpoints.truncate} truncate`,
  );
  // Threads start on a read and end when idle: `live` is how many run now (this command's own reads started some).
  out.line(`${label("readers")}${plural(d.readers.threads, "thread")} (${d.readers.live} running), ${d.readers.completed} reads done, ${d.readers.queued} queued`);
}

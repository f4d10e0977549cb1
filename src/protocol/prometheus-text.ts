/**
 * The Prometheus text exposition format (version 0.0.4) of the daemon's `health`, for
 * `serve --metrics` (`/metrics`) and `sessiondb stats --prometheus` (node_exporter's textfile
 * collector). Names follow Prometheus's conventions: `sessiondb_` prefix, base units (seconds,
 * bytes), `_total` on counters.
 */
import type { HealthResult, Histogram } from "./control.js";

/** What the file itself shows, with or without a daemon (`stats --prometheus`). */
export interface FileFigures {
  fileBytes: number;
  walBytes: number;
  sessions: number;
  messages: number;
}

type Labels = Record<string, string>;

class Exposition {
  readonly #lines: string[] = [];

  metric(name: string, type: "gauge" | "counter", help: string, samples: Array<[Labels, number]>): void {
    this.#lines.push(`# HELP sessiondb_${name} ${help}`, `# TYPE sessiondb_${name} ${type}`);
    for (const [labels, value] of samples) this.#lines.push(`sessiondb_${name}${labelText(labels)} ${number(value)}`);
  }

  histogram(name: string, help: string, h: Histogram): void {
    this.#lines.push(`# HELP sessiondb_${name} ${help}`, `# TYPE sessiondb_${name} histogram`);
    for (const [le, count] of h.buckets) this.#lines.push(`sessiondb_${name}_bucket{le="${number(le)}"} ${count}`);
    this.#lines.push(`sessiondb_${name}_bucket{le="+Inf"} ${h.count}`, `sessiondb_${name}_sum ${number(h.sum)}`, `sessiondb_${name}_count ${h.count}`);
  }

  text(): string {
    return `${this.#lines.join("\n")}\n`;
  }
}

function number(value: number): string {
  if (Number.isNaN(value)) return "NaN";
  if (!Number.isFinite(value)) return value > 0 ? "+Inf" : "-Inf";
  return String(value);
}

function labelText(labels: Labels): string {
  const pairs = Object.entries(labels).map(([k, v]) => `${k}="${v.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, '\\"')}"`);
  return pairs.length === 0 ? "" : `{${pairs.join(",")}}`;
}

/** The metrics: the daemon's when `health` is given (else `sessiondb_daemon_up 0`), then the file's when given. */
export function prometheusText(health: HealthResult | null, file: FileFigures | null = null): string {
  const out = new Exposition();
  out.metric("daemon_up", "gauge", "1 when a daemon serves the database.", [[{}, health === null ? 0 : 1]]);
  if (health !== null) {
    const h = health;
    out.metric("info", "gauge", "The daemon's version, engine and database.", [[{ version: h.version, engine: h.engine, database: h.database }, 1]]);
    out.metric("schema_version", "gauge", "This sessiondb's schema version.", [[{}, h.schemaVersion]]);
    out.metric("file_schema_version", "gauge", "The database's own schema version.", [[{}, h.fileSchemaVersion]]);
    out.metric("read_only", "gauge", "1 when the database is served read-only (a newer schema).", [[{}, h.readOnly ? 1 : 0]]);
    out.metric("uptime_seconds", "gauge", "Seconds since the daemon started.", [[{}, h.uptimeS]]);
    out.metric("clients", "gauge", "Clients connected.", [[{}, h.clients]]);
    out.metric("queue_depth", "gauge", "Requests waiting for the writer or a reader.", [[{}, h.queueDepth]]);
    out.metric("readers", "gauge", "Reader threads (or connections).", [[{}, h.readers.threads]]);
    out.metric("readers_busy", "gauge", "Readers running a read now.", [[{}, h.readers.busy]]);
    out.metric("readers_queued", "gauge", "Reads waiting for a reader.", [[{}, h.readers.queued]]);
    out.metric("wal_bytes", "gauge", "Size of the -wal file.", [[{}, h.walBytes]]);
    out.metric("checkpoints_total", "counter", "WAL checkpoints run, by mode.", [[{ mode: "passive" }, h.checkpoints.passive], [{ mode: "truncate" }, h.checkpoints.truncate]]);
    if (h.lastCommitAgeS !== null) out.metric("last_commit_age_seconds", "gauge", "Seconds since the last group commit.", [[{}, h.lastCommitAgeS]]);
    out.metric("commits_total", "counter", "Group commits.", [[{}, h.writer.batches]]);
    out.metric("writes_total", "counter", "Write requests committed.", [[{}, h.writer.writes]]);
    out.metric("writer_restarts_total", "counter", "Times the writer was restarted.", [[{}, h.writer.restarts]]);
    out.metric("writer_running", "gauge", "1 while the writer thread runs (or starts), 0 once it ended with no client connected (--writer-idle).", [[{}, h.writer.thread === "running" || h.writer.thread === "starting" ? 1 : 0]]);
    out.metric("writer_idle_stops_total", "counter", "Times the writer thread ended with no client connected.", [[{}, h.writer.idleStops]]);
    out.histogram("batch_size", "Requests per group commit.", h.batchSize);
    out.histogram("commit_duration_seconds", "Time of each group commit's COMMIT.", h.commitSeconds);
    out.metric("requests_total", "counter", "Requests answered, by op and outcome code (OK or the error's code).", h.requests.map((r) => [{ op: r.op, code: r.code }, r.count]));
    out.metric("memory_bytes", "gauge", "The daemon process's memory, by kind.", Object.entries(h.memory).map(([kind, bytes]) => [{ kind }, bytes]));
  }
  if (file !== null) {
    out.metric("file_bytes", "gauge", "Size of the database file.", [[{}, file.fileBytes]]);
    out.metric("file_wal_bytes", "gauge", "Size of the database's -wal file.", [[{}, file.walBytes]]);
    out.metric("sessions", "gauge", "Sessions in the database.", [[{}, file.sessions]]);
    out.metric("messages", "gauge", "Messages in the database.", [[{}, file.messages]]);
  }
  return out.text();
}

/**
 * The daemon's public API (`SessionDB.daemon`): its control operations, their arguments and results.
 * The `fault…` ops exist for the reliability tests and answer INVALID_ARGUMENT unless the daemon
 * runs with fault injection on. The wire (src/protocol/control.ts) names these ops; the contract
 * names these types, so neither imports the other's folder.
 */
import type { Engine } from "./engine-kind.js";
import type { IntegrityReport } from "./integrity-report.js";

/** The answer to `check`: SQLite's integrity check and the search indexes' own, on one snapshot. */
export type CheckResult = IntegrityReport;

/**
 * The answer to `backup`: the copy holds `pages` pages, and the file held `sessions` sessions and
 * `messages` messages at the snapshot the copy is of (the client checks the copy against them).
 */
export interface BackupResult {
  pages: number;
  sessions: number;
  messages: number;
}

/** The answer to `optimize`. */
export interface OptimizeResult {
  /** The indexes merged (the CJK one only when the file has it). */
  indexes: string[];
  /** Merge steps, each its own transaction, and the longest one in ms. */
  steps: number;
  maxStepMs: number;
  vacuumed: boolean;
  /** The file and its WAL, in bytes, before and after; `bytesReturned` is what went back to the disk. */
  bytesBefore: number;
  bytesAfter: number;
  bytesReturned: number;
}

export interface HelloResult {
  server: "sessiondb";
  version: string;
  protocol: number;
  schemaVersion: number;
  pid: number;
  /**
   * The real path of the database this daemon serves, or a PostgreSQL database's URL without its
   * password, so a client can check it found the right one.
   */
  database: string;
  /** Which database the daemon serves (absent from daemons before PostgreSQL: "sqlite"). */
  engine?: Engine;
  /** True when the file was made by a newer Hermes: it is served read-only and every write fails with SCHEMA. */
  readOnly: boolean;
  /** The file's own schema version (above `schemaVersion` when `readOnly`). */
  fileSchemaVersion: number;
}

/** Figures about group commit. */
export interface WriterStats {
  queueDepth: number;
  batches: number;
  writes: number;
  meanBatchSize: number;
  maxBatchSize: number;
  commitMs: { p50: number; p90: number; p99: number; max: number };
  lockHeldMs: { p50: number; p99: number; max: number };
  checkpoints: { passive: number; truncate: number; lastLogFrames: number };
  restarts: number;
  /**
   * The writer thread (SQLite; PostgreSQL's connection is always "running"): "stopped" after
   * `serve --writer-idle` with no client connected, until a client connects or a write comes.
   */
  thread: "starting" | "running" | "stopping" | "stopped";
  /** Times the writer thread was ended for want of clients (`--writer-idle`). */
  idleStops: number;
}

/** Figures about the reader threads. */
export interface ReaderStats {
  /** Reads run on at most this many threads (connections), plus one kept for point reads on SQLite. */
  threads: number;
  /**
   * Reader threads (SQLite) or connections (PostgreSQL) alive now: 0 once the daemon has been
   * without reads for its reader idle time; they start again on the next read.
   */
  live: number;
  utilization: number;
  queued: number;
  inFlight: number;
  completed: number;
  paused: boolean;
}

/** The answer to `stats`. */
export interface DaemonStats {
  pid: number;
  version: string;
  /** The database file, or a PostgreSQL database's URL without its password. */
  database: string;
  engine: Engine;
  socket: string;
  /** True when a newer Hermes made the file: served read-only (writes fail with SCHEMA). */
  readOnly: boolean;
  /** The file's own schema version. */
  fileSchemaVersion: number;
  uptimeS: number;
  clients: number;
  walBytes: number;
  queueDepth: number;
  writer: WriterStats;
  readers: ReaderStats;
  /** `watch` subscriptions now, events handed to them since the start, and times one fell behind (told `resync`). */
  watch: { watchers: number; events: number; resyncs: number };
  memory: DaemonMemory;
}

/**
 * The process's memory, in bytes (all threads), and `requestBytes`: the request bytes the daemon
 * holds now (frames being received at their announced length, frames read and not yet run,
 * requests being served), which the daemon option `maxRequestBytesTotal` bounds (128 MiB by default).
 */
export interface DaemonMemory {
  rss: number;
  heapUsed: number;
  external: number;
  arrayBuffers: number;
  requestBytes: number;
}

/** A cumulative histogram: `[upper bound, observations ≤ it]` per bucket, then all of them. */
export interface Histogram {
  buckets: Array<[le: number, count: number]>;
  sum: number;
  count: number;
}

/**
 * The answer to `health` (and `/health` of `serve --metrics`, and what `/metrics` and `stats
 * --prometheus` print): whether the daemon serves, and the figures an operator watches.
 */
export interface HealthResult {
  /** "ok": serving; "read-only": serving a newer schema's file, whose writes fail with SCHEMA. */
  status: "ok" | "read-only";
  pid: number;
  version: string;
  engine: Engine;
  database: string;
  uptimeS: number;
  /** This sessiondb's schema version, and the database's own. */
  schemaVersion: number;
  fileSchemaVersion: number;
  readOnly: boolean;
  clients: number;
  queueDepth: number;
  readers: { threads: number; busy: number; queued: number };
  walBytes: number;
  checkpoints: { passive: number; truncate: number };
  /** Seconds since the last group commit; null before the first. */
  lastCommitAgeS: number | null;
  writer: { batches: number; writes: number; restarts: number; thread: WriterStats["thread"]; idleStops: number };
  /** Requests per group commit, and COMMIT time in seconds, since the daemon started. */
  batchSize: Histogram;
  commitSeconds: Histogram;
  /** Requests answered since the daemon started, by op and outcome ("OK" or the error code). */
  requests: Array<{ op: string; code: string; count: number }>;
  memory: DaemonMemory;
}

/** A handle's way to the daemon that serves it (`SessionDB.daemon`). */
export interface DaemonControl {
  /** What the daemon said of itself when the handle connected. */
  readonly server: HelloResult;
  /** Asks the daemon who it is. */
  hello(): Promise<HelloResult>;
  /** The round trip with no database work. */
  ping(): Promise<"pong">;
  /** The daemon's figures: clients, queue, group commit, readers, WAL, memory. */
  stats(): Promise<DaemonStats>;
  /** Asks the daemon to stop as on SIGTERM: it answers, finishes what is queued and exits. */
  shutdown(): Promise<void>;
  /** Whether it serves, and the figures of `/metrics`. */
  health(): Promise<HealthResult>;
  /** Copies the file into `dest`, an empty file the caller made, online (see `BackupResult`). */
  backup(dest: string): Promise<BackupResult>;
  /** The integrity checks, on a reader's snapshot. */
  check(opts?: { quick?: boolean }): Promise<CheckResult>;
  /** Merges the search indexes in short steps; VACUUMs with `vacuum` (refused while others are connected, unless `force`). */
  optimize(opts?: { vacuum?: boolean; force?: boolean }): Promise<OptimizeResult>;
  /** The reliability tests' fault injection (refused unless the daemon runs with it on). */
  fault<K extends FaultOp>(op: K, ...args: ControlArgs<K>): Promise<void>;
}

/** Each control op's arguments and result. */
export interface ControlOps {
  hello: { args: [opts?: { protocol?: number }]; result: HelloResult };
  ping: { args: []; result: "pong" };
  stats: { args: []; result: DaemonStats };
  health: { args: []; result: HealthResult };
  /** Answered, then the daemon stops as on SIGTERM. */
  shutdown: { args: []; result: null };
  /** `dest`: an absolute path to an empty file, which the daemon's writer fills between batches. */
  backup: { args: [dest: string]; result: BackupResult };
  check: { args: [opts?: { quick?: boolean }]; result: CheckResult };
  optimize: { args: [opts?: { vacuum?: boolean; force?: boolean }]; result: OptimizeResult };
  /** The writer thread dies (see `WriterCrashPoint`); the daemon restarts it. */
  faultCrashWriter: { args: [at?: WriterCrashPoint]; result: null };
  /** The threads serving the next `count` reads (default 1) die mid-read. */
  faultCrashReader: { args: [count?: number]; result: null };
  /** Caps the file at `pages` pages, a full disk for SQLite; null lifts the cap. */
  faultMaxPageCount: { args: [pages: number | null]; result: null };
}

/**
 * When `faultCrashWriter` kills the writer: `now` (the default), between two batches; or
 * `afterCommit`, right after its next batch commits and before that batch is answered.
 */
export type WriterCrashPoint = "now" | "afterCommit";

export type ControlOp = keyof ControlOps;
export type ControlArgs<K extends ControlOp> = ControlOps[K]["args"];
export type ControlResult<K extends ControlOp> = ControlOps[K]["result"];
export type FaultOp = Extract<ControlOp, `fault${string}`>;

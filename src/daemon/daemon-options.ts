import { keyRetentionHours } from "../operations/idempotency-keys.js";
import { availableParallelism } from "node:os";
import { checkRegularFile } from "../regular-file.js";
import { databaseFiles, type DatabaseFiles } from "../database-files.js";
import { invalidArgument } from "../errors.js";
import { daemonLog, type DaemonLog } from "./daemon-log.js";
import { parseMetricsAddress, type MetricsAddress } from "./metrics-server.js";
import {
  DEFAULT_MAX_FRAME_BYTES, DEFAULT_MAX_IN_FLIGHT_PER_CONNECTION, DEFAULT_MAX_REPLY_BUFFER_BYTES, DEFAULT_MAX_REQUEST_BYTES_PER_CONNECTION,
} from "../protocol/frame-limits.js";
import { defaultDatabasePath, locateDatabase, type Engine } from "../engine-kind.js";

export interface DaemonOptions {
  /** The database file, or a PostgreSQL database's `postgres://` URL. Default as SPEC §2. */
  path?: string;
  /** Default: derived from the database path (SPEC §5). */
  socketPath?: string;
  /** Reader threads. Default: the number of cores, at least 2, at most 8. */
  readers?: number;
  /**
   * A reader thread ends once it has served no read for this long, in ms, so an idle daemon
   * holds none (the next read starts one again). Default 5000.
   */
  readerIdleMs?: number;
  /**
   * Once no client has been connected for this long, in ms, the writer thread (SQLite) is ended,
   * checkpointed, so an idle daemon holds no worker thread; the next client connecting (or a
   * write: a spool replay) starts it again. 0: never. Default 5000.
   */
  writerIdleMs?: number;
  /** `FULL` (default): an acknowledged write survives power loss. `NORMAL`: faster commits, but
   *  the last acknowledged writes may be lost on power loss (never on a crash of the daemon). */
  synchronous?: "FULL" | "NORMAL";
  /** Most requests in one group commit. Default 1000. */
  maxBatch?: number;
  /** Longest one transaction keeps adding requests, in ms. Default 50. */
  maxBatchMs?: number;
  /** After this many ms of back-to-back transactions the writer leaves the lock free. Default 20. */
  yieldEveryMs?: number;
  /** How long it leaves the lock free then, in ms, so processes writing directly get their turn. Default 1. */
  yieldMs?: number;
  /**
   * WAL size that triggers a TRUNCATE checkpoint. Default 64 MiB. Past it, writes and new reads
   * wait while running reads finish, so the WAL stays within about this size (plus what is written
   * in the 100 ms between checks) unless another process keeps reading the file.
   */
  walLimitBytes?: number;
  /** Idle time of the writer after which it runs a PASSIVE checkpoint, in ms. Default 200. */
  idleCheckpointMs?: number;
  /** How long a write's idempotency key is kept, at least, in hours (issue 25). Default 24. */
  keyRetentionHours?: number;
  /** SQLite's busy wait of each reader thread's connection, in ms. Default 5000. */
  readerBusyTimeoutMs?: number;
  /** Reply bytes one connection may have unsent before the daemon stops reading it. Default 8 MiB. */
  maxReplyBufferBytes?: number;
  /** Largest frame a client may send. Default 16 MiB. */
  maxFrameBytes?: number;
  /** Requests one connection may have in flight before the daemon stops reading it. Default 256. */
  maxInFlightPerConnection?: number;
  /** Request bytes one connection may have being served before the daemon stops reading it (one
   *  request always runs). Default 16 MiB. */
  maxRequestBytesPerConnection?: number;
  /**
   * Request bytes the whole daemon holds (frames being received or served, all connections).
   * Past it, connections holding over 1 MiB are not read until it falls. Default 128 MiB.
   */
  maxRequestBytesTotal?: number;
  /** A connection that leaves a frame incomplete this long is closed (PROTOCOL), in ms. Default 30,000. */
  frameTimeoutMs?: number;
  /** A connection with nothing in flight and nothing sent this long is closed, in ms; clients reconnect. Default 600,000 (10 min). */
  idleConnectionTimeoutMs?: number;
  /**
   * Event bytes a `watch` subscription may have written to its connection and not yet read by
   * its client; an event past it is dropped with the rest, and the subscriber gets `resync`.
   * Default 1 MiB (`serve --watch-buffer-kb`).
   */
  watchBufferBytes?: number;
  /** `watch` subscriptions the daemon serves at once; past it a watch is answered OVERLOADED. Default 1000 (`serve --max-watchers`). */
  maxWatchers?: number;
  /** Requests queued in the whole daemon before it answers OVERLOADED. Default 10,000. */
  maxQueue?: number;
  /** Deadline of a request (write, read, or each page of a stream) whose client sent none, in ms. Default 60,000. */
  requestTimeoutMs?: number;
  /**
   * Stop cleanly once no client has been connected for this long, in ms (`serve --idle-exit`;
   * daemons that clients start on demand must not outlive their use). Default: never.
   */
  idleExitMs?: number;
  /**
   * A listening Unix socket the daemon was given (systemd socket activation, `LISTEN_FDS`): it
   * serves on it instead of making its socket file. Default: none.
   */
  listenFd?: number;
  /** `HOST:PORT` (loopback only) where `/metrics` and `/health` are served over HTTP. Default: none. */
  metrics?: string;
  /** Where one-line log events go (with a slow request's fields). Default: stderr with a timestamp. */
  log?: DaemonLog;
  /** A request that takes longer than this, in ms, is logged as slow (its op, duration, batch). Default 1000. */
  slowRequestMs?: number;
  /** Test hook: enables the `faultCrashWriter`, `faultCrashReader` and `faultMaxPageCount` control ops. */
  faultInjection?: boolean;
}

export interface ResolvedDaemonOptions extends Required<Omit<DaemonOptions, "log" | "slowRequestMs" | "idleExitMs" | "metrics" | "listenFd">> {
  /** Which engine `path` names, decided once, here. */
  engine: Engine;
  /** Null: the daemon makes its own socket. */
  listenFd: number | null;
  /** Null: no metrics endpoint. */
  metrics: MetricsAddress | null;
  log: DaemonLog;
  slowRequestMs: number;
  /** Null: the daemon never stops for want of clients. */
  idleExitMs: number | null;
  /** The database's files, from its real path, resolved once. */
  files: DatabaseFiles;
}

function positive(value: number | undefined, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== "number" || !Number.isFinite(value) || value <= 0) {
    throw invalidArgument(`daemon option ${name} must be a positive number, got ${String(value)}`);
  }
  return value;
}

/** Every default applied and every value checked, once, where the options enter. */
export function resolveDaemonOptions(options: DaemonOptions): ResolvedDaemonOptions {
  const location = locateDatabase(options.path ?? defaultDatabasePath());
  if (location.engine === "sqlite") checkRegularFile(location.path);
  const files = databaseFiles(location, options.socketPath);
  const synchronous = options.synchronous ?? "FULL";
  if (synchronous !== "FULL" && synchronous !== "NORMAL") throw invalidArgument("synchronous must be FULL or NORMAL");
  return {
    path: location.path,
    engine: location.engine,
    socketPath: files.socket,
    files,
    readers: Math.floor(positive(options.readers, "readers", Math.min(8, Math.max(2, availableParallelism())))),
    readerIdleMs: positive(options.readerIdleMs, "readerIdleMs", 5000),
    writerIdleMs: options.writerIdleMs === 0 ? 0 : positive(options.writerIdleMs, "writerIdleMs", 5000),
    synchronous,
    maxBatch: Math.floor(positive(options.maxBatch, "maxBatch", 1000)),
    maxBatchMs: positive(options.maxBatchMs, "maxBatchMs", 50),
    yieldEveryMs: positive(options.yieldEveryMs, "yieldEveryMs", 20),
    yieldMs: options.yieldMs === 0 ? 0 : positive(options.yieldMs, "yieldMs", 1),
    walLimitBytes: positive(options.walLimitBytes, "walLimitBytes", 64 * 1024 * 1024),
    idleCheckpointMs: positive(options.idleCheckpointMs, "idleCheckpointMs", 200),
    keyRetentionHours: keyRetentionHours(options.keyRetentionHours, "keyRetentionHours"),
    readerBusyTimeoutMs: positive(options.readerBusyTimeoutMs, "readerBusyTimeoutMs", 5000),
    maxReplyBufferBytes: Math.floor(positive(options.maxReplyBufferBytes, "maxReplyBufferBytes", DEFAULT_MAX_REPLY_BUFFER_BYTES)),
    maxFrameBytes: Math.floor(positive(options.maxFrameBytes, "maxFrameBytes", DEFAULT_MAX_FRAME_BYTES)),
    maxInFlightPerConnection: Math.floor(positive(options.maxInFlightPerConnection, "maxInFlightPerConnection", DEFAULT_MAX_IN_FLIGHT_PER_CONNECTION)),
    maxRequestBytesPerConnection: Math.floor(positive(options.maxRequestBytesPerConnection, "maxRequestBytesPerConnection", DEFAULT_MAX_REQUEST_BYTES_PER_CONNECTION)),
    maxRequestBytesTotal: Math.floor(positive(options.maxRequestBytesTotal, "maxRequestBytesTotal", 128 * 1024 * 1024)),
    frameTimeoutMs: positive(options.frameTimeoutMs, "frameTimeoutMs", 30_000),
    idleConnectionTimeoutMs: positive(options.idleConnectionTimeoutMs, "idleConnectionTimeoutMs", 600_000),
    maxQueue: Math.floor(positive(options.maxQueue, "maxQueue", 10_000)),
    watchBufferBytes: Math.floor(positive(options.watchBufferBytes, "watchBufferBytes", 1024 * 1024)),
    maxWatchers: Math.floor(positive(options.maxWatchers, "maxWatchers", 1000)),
    requestTimeoutMs: positive(options.requestTimeoutMs, "requestTimeoutMs", 60_000),
    idleExitMs: options.idleExitMs === undefined ? null : positive(options.idleExitMs, "idleExitMs", 0),
    metrics: options.metrics === undefined ? null : parseMetricsAddress(options.metrics),
    listenFd: options.listenFd === undefined ? null : Math.floor(positive(options.listenFd, "listenFd", 3)),
    log: options.log ?? daemonLog("text"),
    slowRequestMs: positive(options.slowRequestMs, "slowRequestMs", 1000),
    faultInjection: options.faultInjection ?? false,
  };
}

import { chmodSync, statSync, unlinkSync } from "node:fs";
import { createServer, type Server, type Socket } from "node:net";
import { availableParallelism } from "node:os";
import { dirname } from "node:path";
import { invalidArgument, SessionDBError } from "../errors.js";
import { operations, type OpName, type ReadOpName, type WriteOpName } from "../engine/operations.js";
import { newerSchemaError } from "../engine/database-file.js";
import { makePrivateDir } from "../engine/private-files.js";
import { SCHEMA_VERSION } from "../engine/schema.js";
import type { Page } from "../engine/operation.js";
import { DEFAULT_MAX_FRAME_BYTES } from "../protocol/frame-codec.js";
import { PROTOCOL_VERSION, type HelloResult, type Request } from "../protocol/messages.js";
import { probeDaemon } from "../protocol/probe.js";
import { defaultDatabasePath, defaultSocketPath, realDatabasePath } from "../socket-path.js";
import { VERSION } from "../version.js";
import { ClientConnection } from "./client-connection.js";
import { InstanceLock } from "./instance-lock.js";
import { ReaderPool, type ReaderStats } from "./reader-pool.js";
import { WriterClient, type WriterStats } from "./writer-client.js";

export interface DaemonOptions {
  /** The database file. Default as SPEC §2. */
  path?: string;
  /** Default: derived from the database path (SPEC §5). */
  socketPath?: string;
  /** Reader threads. Default: the number of cores, at least 2, at most 8. */
  readers?: number;
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
  /** Largest frame a client may send. Default 16 MiB. */
  maxFrameBytes?: number;
  /** Requests one connection may have in flight before the daemon stops reading it. Default 256. */
  maxInFlightPerConnection?: number;
  /** Requests queued in the whole daemon before it answers OVERLOADED. Default 10,000. */
  maxQueue?: number;
  /** Deadline of a write whose client sent none, in ms. Default 60,000. */
  requestTimeoutMs?: number;
  /** Where one-line log events go. Default: stderr with a timestamp. */
  log?: (line: string) => void;
  /** Test hook: enables the `faultCrashWriter`, `faultCrashReader` and `faultMaxPageCount` control ops. */
  faultInjection?: boolean;
}

interface ResolvedDaemonOptions extends Required<Omit<DaemonOptions, "log">> {
  log: (line: string) => void;
}

export interface DaemonStats {
  pid: number;
  version: string;
  database: string;
  socket: string;
  /** True when a newer Hermes made the file: served read-only (SPEC §8, `SCHEMA`). */
  readOnly: boolean;
  /** The file's own schema version. */
  fileSchemaVersion: number;
  uptimeS: number;
  clients: number;
  walBytes: number;
  queueDepth: number;
  writer: WriterStats;
  readers: ReaderStats;
  /** The process's memory, in bytes (all threads). */
  memory: { rss: number; heapUsed: number; external: number; arrayBuffers: number };
}

function positive(value: number | undefined, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== "number" || !Number.isFinite(value) || value <= 0) {
    throw invalidArgument(`daemon option ${name} must be a positive number, got ${String(value)}`);
  }
  return value;
}

function resolveDaemonOptions(options: DaemonOptions): ResolvedDaemonOptions {
  const path = realDatabasePath(options.path ?? defaultDatabasePath());
  const synchronous = options.synchronous ?? "FULL";
  if (synchronous !== "FULL" && synchronous !== "NORMAL") throw invalidArgument("synchronous must be FULL or NORMAL");
  return {
    path,
    socketPath: options.socketPath ?? defaultSocketPath(path),
    readers: Math.floor(positive(options.readers, "readers", Math.min(8, Math.max(2, availableParallelism())))),
    synchronous,
    maxBatch: Math.floor(positive(options.maxBatch, "maxBatch", 1000)),
    maxBatchMs: positive(options.maxBatchMs, "maxBatchMs", 50),
    yieldEveryMs: positive(options.yieldEveryMs, "yieldEveryMs", 20),
    yieldMs: options.yieldMs === 0 ? 0 : positive(options.yieldMs, "yieldMs", 1),
    walLimitBytes: positive(options.walLimitBytes, "walLimitBytes", 64 * 1024 * 1024),
    maxFrameBytes: Math.floor(positive(options.maxFrameBytes, "maxFrameBytes", DEFAULT_MAX_FRAME_BYTES)),
    maxInFlightPerConnection: Math.floor(positive(options.maxInFlightPerConnection, "maxInFlightPerConnection", 256)),
    maxQueue: Math.floor(positive(options.maxQueue, "maxQueue", 10_000)),
    requestTimeoutMs: positive(options.requestTimeoutMs, "requestTimeoutMs", 60_000),
    log: options.log ?? ((line) => process.stderr.write(`${new Date().toISOString()} sessiondb: ${line}\n`)),
    faultInjection: options.faultInjection ?? false,
  };
}

const WAL_CHECK_INTERVAL_MS = 100;
const READ_PAUSE_MAX_MS = 2000;
const WAL_RETRY_AFTER_BUSY_MS = 5000;
/**
 * Connections waiting to be accepted. A Unix socket refuses a connect past it at once (EAGAIN,
 * no retry), so a burst of clients starting together needs room; the kernel caps it at somaxconn.
 */
const LISTEN_BACKLOG = 4096;

/**
 * The daemon (SPEC §5): one writer thread with group commit, a pool of reader threads, and the
 * Unix socket. `Daemon.start` returns once it is listening; `close()` drains and stops it.
 */
export class Daemon {
  readonly options: ResolvedDaemonOptions;
  readonly #lock: InstanceLock;
  readonly #writer: WriterClient;
  readonly #readers: ReaderPool;
  readonly #server: Server;
  readonly #connections = new Set<ClientConnection>();
  readonly #sockets = new Set<Socket>();
  readonly #startedAt = Date.now();
  readonly #walTimer: NodeJS.Timeout;
  #readsQueued = 0;
  #truncating = false;
  /** No TRUNCATE before this time: the last one found another process reading. */
  #walRetryAt = 0;
  #closing: Promise<void> | null = null;
  /** Resolves when the daemon has stopped (after `close()` or a `shutdown` request). */
  readonly closed: Promise<void>;
  #resolveClosed!: () => void;

  private constructor(options: ResolvedDaemonOptions, lock: InstanceLock, writer: WriterClient, readers: ReaderPool) {
    this.options = options;
    this.#lock = lock;
    this.#writer = writer;
    this.#readers = readers;
    this.closed = new Promise((resolve) => (this.#resolveClosed = resolve));
    this.#server = createServer((socket) => this.#accept(socket));
    this.#walTimer = setInterval(() => void this.#watchWal(), WAL_CHECK_INTERVAL_MS);
    this.#walTimer.unref();
  }

  static async start(options: DaemonOptions = {}): Promise<Daemon> {
    const resolved = resolveDaemonOptions(options);
    makePrivateDir(dirname(resolved.path));
    const lock = await acquireLock(resolved);
    let writer: WriterClient | undefined;
    let readers: ReaderPool | undefined;
    try {
      writer = await WriterClient.start({
        path: resolved.path,
        synchronous: resolved.synchronous,
        maxBatch: resolved.maxBatch,
        maxBatchMs: resolved.maxBatchMs,
        yieldEveryMs: resolved.yieldEveryMs,
        yieldMs: resolved.yieldMs,
        walLimitBytes: resolved.walLimitBytes,
        idleCheckpointMs: 200,
        faultInjection: resolved.faultInjection,
      });
      readers = new ReaderPool(resolved.readers, {
        path: resolved.path,
        busyTimeoutMs: 5000,
        faultInjection: resolved.faultInjection,
      });
      const daemon = new Daemon(resolved, lock, writer, readers);
      await daemon.#listen();
      resolved.log(
        `listening on ${resolved.socketPath} for ${resolved.path} (pid ${process.pid}, ${resolved.readers} readers, synchronous=${resolved.synchronous})`,
      );
      if (writer.newerVersion !== null) {
        resolved.log(`serving read-only: the file has schema version ${writer.newerVersion}, newer than ${SCHEMA_VERSION}; writes fail with SCHEMA`);
      }
      return daemon;
    } catch (err) {
      await writer?.close();
      await readers?.close();
      lock.release();
      throw err;
    }
  }

  get socketPath(): string {
    return this.options.socketPath;
  }

  stats(): DaemonStats {
    return {
      pid: process.pid,
      version: VERSION,
      database: this.options.path,
      socket: this.options.socketPath,
      readOnly: this.#writer.newerVersion !== null,
      fileSchemaVersion: this.#writer.newerVersion ?? SCHEMA_VERSION,
      uptimeS: (Date.now() - this.#startedAt) / 1000,
      clients: this.#connections.size,
      walBytes: walSize(this.options.path),
      queueDepth: this.#writer.queueDepth + this.#readsQueued,
      writer: this.#writer.stats(),
      readers: this.#readers.stats(),
      memory: memory(),
    };
  }

  /** Stops accepting, answers every queued request, checkpoints, and releases the file. Idempotent. */
  close(): Promise<void> {
    this.#closing ??= this.#shutdown();
    return this.#closing;
  }

  async #shutdown(): Promise<void> {
    const { log } = this.options;
    log("shutting down: no new connections; finishing queued requests");
    clearInterval(this.#walTimer);
    const serverClosed = new Promise<void>((resolve) => this.#server.close(() => resolve()));
    for (const connection of this.#connections) connection.shutdown();
    await waitFor(() => this.#connections.size === 0, 10_000);
    for (const socket of this.#sockets) socket.destroy();
    await serverClosed;
    await this.#writer.close();
    await this.#readers.close();
    try {
      unlinkSync(this.options.socketPath);
    } catch {
      // already gone
    }
    this.#lock.release();
    log("stopped (checkpointed, socket removed)");
    this.#resolveClosed();
  }

  async #listen(): Promise<void> {
    const { socketPath } = this.options;
    // We hold the instance lock, so a socket file here is a dead daemon's: replace it.
    try {
      unlinkSync(socketPath);
    } catch {
      // none
    }
    const previousUmask = process.umask(0o177);
    try {
      await new Promise<void>((resolve, reject) => {
        this.#server.once("error", reject);
        this.#server.listen({ path: socketPath, backlog: LISTEN_BACKLOG }, () => {
          this.#server.off("error", reject);
          resolve();
        });
      });
    } finally {
      process.umask(previousUmask);
    }
    chmodSync(socketPath, 0o600);
  }

  #accept(socket: Socket): void {
    if (this.#closing !== null) {
      socket.destroy();
      return;
    }
    this.#sockets.add(socket);
    const connection = new ClientConnection(
      socket,
      {
        maxFrameBytes: this.options.maxFrameBytes,
        maxInFlight: this.options.maxInFlightPerConnection,
        maxBufferedBytes: 8 * 1024 * 1024,
      },
      (request, conn) => this.#handle(request, conn),
      this.options.log,
    );
    this.#connections.add(connection);
    socket.on("close", () => {
      this.#sockets.delete(socket);
      this.#connections.delete(connection);
    });
  }

  async #handle(request: Request, connection: ClientConnection): Promise<unknown> {
    switch (request.op) {
      case "hello":
        return this.#hello(request.args);
      case "ping":
        return "pong";
      case "stats":
        return this.stats();
      case "shutdown":
        setImmediate(() => void this.close());
        return null;
      case "faultCrashWriter":
        this.#requireFaultInjection();
        this.#writer.crash();
        return null;
      case "faultCrashReader":
        this.#requireFaultInjection();
        this.#readers.crashDuringNextReads(faultCount(request.args[0], 1));
        return null;
      case "faultMaxPageCount":
        this.#requireFaultInjection();
        this.#writer.maxPageCount(request.args[0] === null ? null : faultCount(request.args[0], null));
        return null;
    }
    if (this.#closing !== null) throw new SessionDBError("UNAVAILABLE", "the daemon is shutting down");
    if (this.#writer.queueDepth + this.#readsQueued >= this.options.maxQueue) {
      throw new SessionDBError("OVERLOADED", `the daemon has ${this.options.maxQueue} requests queued; retry later`);
    }
    const op = operations[request.op];
    const params = op.parse(request.args);
    if (op.kind === "write") {
      if (this.#writer.newerVersion !== null) throw newerSchemaError(this.options.path, this.#writer.newerVersion, request.op);
      const deadline = Date.now() + (request.timeoutMs ?? this.options.requestTimeoutMs);
      return this.#writer.write(request.op as WriteOpName, params, deadline);
    }
    if (op.kind === "read") return this.#read(request.op as ReadOpName, params);
    return this.#stream(request.op, params, request.id, connection);
  }

  #hello(args: unknown[]): HelloResult {
    const wanted = (args[0] as { protocol?: unknown } | undefined)?.protocol;
    if (wanted !== undefined && wanted !== PROTOCOL_VERSION) {
      throw new SessionDBError("PROTOCOL", `unsupported protocol ${String(wanted)}; this daemon speaks protocol ${PROTOCOL_VERSION}`);
    }
    return {
      server: "sessiondb",
      version: VERSION,
      protocol: PROTOCOL_VERSION,
      schemaVersion: SCHEMA_VERSION,
      pid: process.pid,
      database: this.options.path,
      readOnly: this.#writer.newerVersion !== null,
      fileSchemaVersion: this.#writer.newerVersion ?? SCHEMA_VERSION,
    };
  }

  async #read(op: OpName, params: unknown, cursor?: unknown): Promise<unknown> {
    this.#readsQueued++;
    try {
      return await this.#readers.run(op, params, cursor);
    } finally {
      this.#readsQueued--;
    }
  }

  /** Sends a streamed result page by page, as fast as the client reads it. */
  async #stream(op: OpName, params: unknown, id: number, connection: ClientConnection): Promise<null> {
    let cursor: unknown = null;
    do {
      const page = (await this.#read(op, params, cursor)) as Page<unknown, unknown>;
      if (page.items.length > 0) await connection.sendChunk(id, page.items);
      cursor = page.next;
    } while (cursor !== null && connection.open);
    return null;
  }

  /**
   * Keeps the WAL bounded: past the limit, writes and new reads wait briefly while running reads
   * finish, so a TRUNCATE checkpoint finds no reader of ours pinning old frames.
   */
  async #watchWal(): Promise<void> {
    if (this.#truncating || this.#closing !== null || Date.now() < this.#walRetryAt) return;
    if (this.#writer.newerVersion !== null) return; // not ours to checkpoint
    const size = walSize(this.options.path);
    if (size <= this.options.walLimitBytes) return;
    this.#truncating = true;
    // Writes wait too, or the WAL would grow all the while running reads finish.
    this.#writer.hold(true);
    try {
      await this.#readers.pause(READ_PAUSE_MAX_MS);
      const result = await this.#writer.checkpoint("TRUNCATE");
      // Another process is reading: do not hold everyone up again at once.
      if (result.busy) this.#walRetryAt = Date.now() + WAL_RETRY_AFTER_BUSY_MS;
      this.options.log(
        `checkpoint TRUNCATE: WAL was ${(size / 1048576).toFixed(1)} MiB; ${result.busy ? "incomplete (another process is reading)" : "done"}, now ${(walSize(this.options.path) / 1048576).toFixed(1)} MiB`,
      );
    } finally {
      this.#writer.hold(false);
      this.#readers.resume();
      this.#truncating = false;
    }
  }

  #requireFaultInjection(): void {
    if (!this.options.faultInjection) {
      throw new SessionDBError("INVALID_ARGUMENT", "fault injection is off (start the daemon with SESSIONDB_FAULT_INJECTION=1)");
    }
  }
}

/** The positive count a fault-injection op takes, or its default when it is left out. */
function faultCount(value: unknown, fallback: number | null): number {
  if (value === undefined && fallback !== null) return fallback;
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 1) throw invalidArgument("this fault-injection op takes a positive count");
  return value;
}

function memory(): DaemonStats["memory"] {
  const { rss, heapUsed, external, arrayBuffers } = process.memoryUsage();
  return { rss, heapUsed, external, arrayBuffers };
}

function walSize(databasePath: string): number {
  try {
    return statSync(`${databasePath}-wal`).size;
  } catch {
    return 0;
  }
}

async function waitFor(condition: () => boolean, maxMs: number): Promise<void> {
  const until = Date.now() + maxMs;
  while (!condition() && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
}

/** The instance lock, or an UNAVAILABLE error naming the daemon that already serves the file. */
async function acquireLock(options: ResolvedDaemonOptions): Promise<InstanceLock> {
  try {
    return InstanceLock.acquire(options.path);
  } catch (err) {
    if (!(err instanceof SessionDBError) || err.code !== "UNAVAILABLE") throw err;
    // The winner of a simultaneous start may not listen yet: ask for a moment.
    const until = Date.now() + 5000;
    let hello: HelloResult | null = null;
    while (hello === null && Date.now() < until) {
      hello = await probeDaemon(options.socketPath, 500);
      if (hello === null) await new Promise((r) => setTimeout(r, 100));
    }
    const who = hello === null ? "another sessiondb daemon" : `a sessiondb daemon (pid ${hello.pid})`;
    throw new SessionDBError(
      "UNAVAILABLE",
      `${who} already serves ${options.path}${hello === null ? ` (it holds ${InstanceLock.pathFor(options.path)})` : ` on ${options.socketPath}`}`,
    );
  }
}

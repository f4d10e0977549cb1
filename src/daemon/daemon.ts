import { chmodSync, unlinkSync } from "node:fs";
import { createServer, type Server, type Socket } from "node:net";
import { dirname } from "node:path";
import { SessionDBError } from "../errors.js";
import { parseOperation } from "../engine/operations.js";
import { makePrivateDir } from "../engine/private-files.js";
import { OPERATION_KINDS, type OpName, type ReadOpName, type WriteOpName } from "../operation-catalogue.js";
import type { Page } from "../engine/define-operation.js";
import { isControlOp, type DaemonStats } from "../protocol/control.js";
import type { Request } from "../protocol/messages.js";
import { VERSION } from "../version.js";
import { ClientConnection } from "./client-connection.js";
import { resolveDaemonOptions, type DaemonOptions, type ResolvedDaemonOptions } from "./daemon-options.js";
import { acquireInstanceLock, type InstanceLock } from "./instance-lock.js";
import { walSize } from "./wal-guard.js";
import { controlHandlers, type ControlHandlers } from "./control-handlers.js";
import { closeWhenIdle } from "./idle-exit.js";
import type { ReadRequester } from "./reader-pool.js";
import { RequestBudget } from "./request-budget.js";
import { BodyPool } from "../protocol/body-pool.js";
import type { DaemonEngine, DaemonReaders, DaemonWriter } from "./daemon-engine.js";
import { startSqliteEngine } from "./sqlite-engine.js";
import { startPgEngine } from "../pg/pg-daemon-engine.js";
import { isPostgresUrl } from "../pg/pg-url.js";

export type { DaemonOptions } from "./daemon-options.js";

/**
 * Connections waiting to be accepted. A Unix socket refuses a connect past it at once (EAGAIN,
 * no retry), so a burst of clients starting together needs room; the kernel caps it at somaxconn.
 */
const LISTEN_BACKLOG = 4096;

/**
 * The daemon (SPEC §5): one writer with group commit, a pool of readers, and the Unix socket.
 * The writer and readers are the engine's: threads over the SQLite file, or connections to
 * PostgreSQL. `Daemon.start` returns once it is listening; `close()` drains and stops it.
 */
export class Daemon {
  readonly options: ResolvedDaemonOptions;
  readonly #lock: InstanceLock;
  readonly #engine: DaemonEngine;
  readonly #writer: DaemonWriter;
  readonly #readers: DaemonReaders;
  readonly #server: Server;
  readonly #connections = new Set<ClientConnection>();
  readonly #sockets = new Set<Socket>();
  readonly #startedAt = Date.now();
  readonly #control: ControlHandlers;
  #readsQueued = 0;
  readonly #memory: { budget: RequestBudget; bodies: BodyPool };
  /** Enforces the connections' time limits (incomplete frames, idle connections). */
  readonly #sweeper: NodeJS.Timeout;
  #closing: Promise<void> | null = null;
  /** Resolves when the daemon has stopped (after `close()` or a `shutdown` request). */
  readonly closed: Promise<void>;
  #resolveClosed!: () => void;

  private constructor(options: ResolvedDaemonOptions, lock: InstanceLock, engine: DaemonEngine) {
    const { writer, readers } = engine;
    this.options = options;
    this.#engine = engine;
    this.#lock = lock;
    this.#writer = writer;
    this.#readers = readers;
    this.closed = new Promise((resolve) => (this.#resolveClosed = resolve));
    // Half-open: a client that ends its side after its last request still gets every reply.
    this.#server = createServer({ allowHalfOpen: true }, (socket) => this.#accept(socket));
    this.#control = controlHandlers({
      database: options.files.db,
      engine,
      faultInjection: options.faultInjection,
      writer,
      readers,
      stats: () => this.stats(),
      close: () => this.close(),
    });
    this.#memory = { budget: new RequestBudget(options.maxRequestBytesTotal), bodies: new BodyPool(options.maxRequestBytesTotal) };
    this.#sweeper = setInterval(() => {
      const now = Date.now();
      for (const connection of this.#connections) connection.sweep(now);
    }, Math.min(1000, options.frameTimeoutMs / 2, options.idleConnectionTimeoutMs / 2));
    this.#sweeper.unref();
  }

  static async start(options: DaemonOptions = {}): Promise<Daemon> {
    const resolved = resolveDaemonOptions(options);
    const postgres = isPostgresUrl(resolved.path);
    if (!postgres) makePrivateDir(dirname(resolved.path));
    const lock = await acquireInstanceLock(resolved.files);
    let engine: DaemonEngine | undefined;
    try {
      engine = postgres ? await startPgEngine(resolved) : await startSqliteEngine(resolved);
      const daemon = new Daemon(resolved, lock, engine);
      await daemon.#listen();
      resolved.log(`listening on ${resolved.socketPath} for ${resolved.files.db} (pid ${process.pid}, ${engine.description})`);
      if (engine.readOnly) {
        resolved.log(`serving read-only: the database has schema version ${engine.fileSchemaVersion}, newer than this sessiondb's; writes fail with SCHEMA`);
      }
      if (resolved.idleExitMs !== null) closeWhenIdle(daemon, resolved.idleExitMs, resolved.log);
      return daemon;
    } catch (err) {
      engine?.stopHousekeeping();
      await engine?.writer.close();
      await engine?.readers.close();
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
      database: this.options.files.db,
      engine: this.#engine.engine,
      socket: this.options.socketPath,
      readOnly: this.#engine.readOnly,
      fileSchemaVersion: this.#engine.fileSchemaVersion,
      uptimeS: (Date.now() - this.#startedAt) / 1000,
      clients: this.#connections.size,
      walBytes: walSize(this.options.files.wal),
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
    this.#engine.stopHousekeeping();
    clearInterval(this.#sweeper);
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
        maxBufferedBytes: this.options.maxReplyBufferBytes,
        maxRequestBytes: this.options.maxRequestBytesPerConnection,
        frameTimeoutMs: this.options.frameTimeoutMs,
        idleTimeoutMs: this.options.idleConnectionTimeoutMs,
      },
      this.#memory,
      (request, conn, receivedAt) => this.#handle(request, conn, receivedAt),
      this.options.log,
    );
    this.#connections.add(connection);
    socket.on("close", () => {
      this.#sockets.delete(socket);
      this.#connections.delete(connection);
    });
  }

  async #handle(request: Request, connection: ClientConnection, receivedAt: number): Promise<unknown> {
    // Control ops are answered even while the daemon shuts down.
    if (isControlOp(request.op)) return this.#control[request.op](request.args);
    if (this.#closing !== null) throw new SessionDBError("UNAVAILABLE", "the daemon is shutting down");
    if (this.#writer.queueDepth + this.#readsQueued >= this.options.maxQueue) {
      throw new SessionDBError("OVERLOADED", `the daemon has ${this.options.maxQueue} requests queued; retry later`);
    }
    const kind = OPERATION_KINDS[request.op];
    const params = parseOperation(request.op, request.args);
    const deadline = Math.min(receivedAt + (request.timeoutMs ?? this.options.requestTimeoutMs), request.deadlineEpochMs ?? Infinity);
    if (kind === "write") {
      if (this.#engine.readOnly) throw this.#engine.readOnlyError(request.op);
      return this.#writer.write(request.op as WriteOpName, params, deadline);
    }
    if (kind === "read") return this.#read(request.op as ReadOpName, params, deadline, connection);
    return this.#stream(request.op, params, request.id, connection, deadline - receivedAt);
  }

  async #read(op: OpName, params: unknown, deadline: number, requester: ReadRequester, cursor?: unknown): Promise<unknown> {
    this.#readsQueued++;
    try {
      return await this.#readers.run(op, params, deadline, cursor, requester);
    } finally {
      this.#readsQueued--;
    }
  }

  /** Sends a streamed result page by page, as fast as the client reads it. */
  /** Each page has the request's time span as its own deadline: the client waits page by page. */
  async #stream(op: OpName, params: unknown, id: number, connection: ClientConnection, pageTimeoutMs: number): Promise<null> {
    let cursor: unknown = null;
    do {
      const page = (await this.#read(op, params, Date.now() + pageTimeoutMs, connection, cursor)) as Page<unknown, unknown>;
      if (page.items.length > 0) await connection.sendChunk(id, page.items);
      cursor = page.next;
    } while (cursor !== null && connection.open);
    return null;
  }
}

function memory(): DaemonStats["memory"] {
  const { rss, heapUsed, external, arrayBuffers } = process.memoryUsage();
  return { rss, heapUsed, external, arrayBuffers };
}

async function waitFor(condition: () => boolean, maxMs: number): Promise<void> {
  const until = Date.now() + maxMs;
  while (!condition() && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
}

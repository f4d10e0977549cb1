import { accessSync, constants } from "node:fs";
import type { Socket } from "node:net";
import { dirname } from "node:path";
import { SessionDBError } from "../errors.js";
import { parseOperation } from "../engine/operations.js";
import { newerSchemaError } from "../engine/database-file.js";
import { createPrivateFile, makePrivateDir } from "../engine/private-files.js";
import { SCHEMA_VERSION } from "../engine/schema.js";
import { OPERATION_KINDS, type OpName, type ReadOpName, type WriteOpName } from "../operation-catalogue.js";
import type { Page } from "../engine/define-operation.js";
import { isControlOp, type DaemonStats } from "../protocol/control.js";
import type { Request } from "../protocol/messages.js";
import { VERSION } from "../version.js";
import { ClientConnection } from "./client-connection.js";
import { resolveDaemonOptions, type DaemonOptions, type ResolvedDaemonOptions } from "./daemon-options.js";
import { fileIdentity, type FileIdentity } from "../file-identity.js";
import { identityLockPath, identitySocketPath, privateRuntimeDir } from "../socket-path.js";
import { acquireInstanceLock, type InstanceLock } from "./instance-lock.js";
import { DaemonSocket } from "./daemon-socket.js";
import { FileWatch } from "./file-watch.js";
import { WalGuard, walSize } from "./wal-guard.js";
import { controlHandlers, type ControlHandlers } from "./control-handlers.js";
import { closeWhenIdle } from "./idle-exit.js";
import { ReaderPool } from "./reader-pool.js";
import { WriterClient } from "./writer-client.js";

export type { DaemonOptions } from "./daemon-options.js";

/**
 * The daemon (SPEC §5): one writer thread with group commit, a pool of reader threads, and the
 * Unix socket. `Daemon.start` returns once it is listening; `close()` drains and stops it.
 */
export class Daemon {
  readonly options: ResolvedDaemonOptions;
  /** The lock beside the database's name, then the one under its identity. Release is idempotent. */
  readonly #locks: readonly InstanceLock[];
  readonly #identity: FileIdentity;
  readonly #writer: WriterClient;
  readonly #readers: ReaderPool;
  /** The socket of SPEC §5, then the identity socket (where clients opening another name look). */
  #listening: DaemonSocket[] = [];
  #fileWatch: FileWatch | null = null;
  readonly #connections = new Set<ClientConnection>();
  readonly #sockets = new Set<Socket>();
  readonly #startedAt = Date.now();
  readonly #walGuard: WalGuard;
  readonly #control: ControlHandlers;
  #readsQueued = 0;
  /** Set when the path stopped naming the file served: the daemon stops. */
  #fileLost: "replaced" | "removed" | null = null;
  #closing: Promise<void> | null = null;
  /** Resolves when the daemon has stopped (after `close()` or a `shutdown` request). */
  readonly closed: Promise<void>;
  #resolveClosed!: () => void;

  private constructor(
    options: ResolvedDaemonOptions, locks: readonly InstanceLock[], identity: FileIdentity, writer: WriterClient, readers: ReaderPool,
  ) {
    this.options = options;
    this.#locks = locks;
    this.#identity = identity;
    this.#writer = writer;
    this.#readers = readers;
    this.closed = new Promise((resolve) => (this.#resolveClosed = resolve));
    this.#control = controlHandlers({
      database: options.path,
      faultInjection: options.faultInjection,
      writer,
      readers,
      stats: () => this.stats(),
      close: () => this.close(),
    });
    this.#walGuard = new WalGuard(options.files.wal, options.walLimitBytes, writer, readers, options.log);
  }

  static async start(options: DaemonOptions = {}): Promise<Daemon> {
    const resolved = resolveDaemonOptions(options);
    const { files } = resolved;
    makePrivateDir(dirname(resolved.path));
    const locks = [await acquireInstanceLock(files.lock, files.socket, files.db)];
    let writer: WriterClient | undefined;
    let readers: ReaderPool | undefined;
    try {
      // Keyed by the file, not its name: a second daemon on a hard link of it must not start.
      const identity = servableFile(files.db);
      privateRuntimeDir();
      locks.push(await acquireInstanceLock(identityLockPath(identity), identitySocketPath(identity), files.db));
      writer = await WriterClient.start({
        path: resolved.path,
        identity,
        synchronous: resolved.synchronous,
        maxBatch: resolved.maxBatch,
        maxBatchMs: resolved.maxBatchMs,
        yieldEveryMs: resolved.yieldEveryMs,
        yieldMs: resolved.yieldMs,
        walLimitBytes: resolved.walLimitBytes,
        idleCheckpointMs: resolved.idleCheckpointMs,
        faultInjection: resolved.faultInjection,
      }, resolved.log).catch((err: unknown) => {
        throw namingThePath(err, resolved.path);
      });
      readers = new ReaderPool(resolved.readers, {
        path: resolved.path,
        busyTimeoutMs: resolved.readerBusyTimeoutMs,
        faultInjection: resolved.faultInjection,
      }, resolved.log);
      const daemon = new Daemon(resolved, locks, identity, writer, readers);
      try {
        await daemon.#listen();
      } catch (err) {
        for (const socket of daemon.#listening) await socket.close();
        throw err;
      }
      resolved.log(
        `listening on ${resolved.socketPath} for ${resolved.path} (pid ${process.pid}, ${resolved.readers} readers, synchronous=${resolved.synchronous})`,
      );
      if (writer.newerVersion !== null) {
        resolved.log(`serving read-only: the file has schema version ${writer.newerVersion}, newer than ${SCHEMA_VERSION}; writes fail with SCHEMA`);
      }
      if (resolved.idleExitMs !== null) closeWhenIdle(daemon, resolved.idleExitMs, resolved.log);
      return daemon;
    } catch (err) {
      await writer?.close();
      await readers?.close();
      for (const lock of locks) lock.release();
      throw err;
    }
  }

  /** True once the daemon stopped because another file took its file's path (a failure: `serve` exits 1). */
  get fileReplaced(): boolean {
    return this.#fileLost === "replaced";
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
    this.#walGuard.stop();
    this.#fileWatch?.stop();
    // A replaced (or removed) file is released before clients go: until the writer and readers
    // close, the old file's WAL is live under the database's name, and a client opening the new
    // file directly would join it. Meanwhile requests get UNAVAILABLE; failing-over clients wait
    // for the hang-up.
    const releaseFirst = this.#fileLost !== null;
    if (releaseFirst) await this.#release();
    const serverClosed = Promise.all(this.#listening.map((socket) => socket.close()));
    // Once the file is closed and the identity socket gone, its inode number may be reused by a
    // new file at once: the identity lock must not outlive them (locks[1], see start()).
    if (releaseFirst) this.#locks[1]?.release();
    for (const connection of this.#connections) connection.shutdown();
    await waitFor(() => this.#connections.size === 0, 10_000);
    for (const socket of this.#sockets) socket.destroy();
    await serverClosed;
    if (!releaseFirst) await this.#release();
    for (const lock of this.#locks) lock.release();
    log("stopped (checkpointed, socket removed)");
    this.#resolveClosed();
  }

  /** Lets queued writes finish, checkpoints and closes every connection to the file. */
  async #release(): Promise<void> {
    await this.#writer.close();
    await this.#readers.close();
  }

  async #listen(): Promise<void> {
    const accept = (socket: Socket) => this.#accept(socket);
    for (const path of [this.options.socketPath, identitySocketPath(this.#identity)]) {
      this.#listening.push(await DaemonSocket.listen(path, accept));
    }
    this.#fileWatch = new FileWatch(this.options.path, this.#identity, (how) => {
      this.#fileLost = how;
      this.options.log(
        how === "replaced"
          ? `${this.options.path} was replaced: it no longer names the file this daemon serves; stopping (clients go on with the file now there)`
          : `${this.options.path} was removed; stopping`,
      );
      void this.close();
    });
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
    // Control ops are answered even while the daemon shuts down.
    if (isControlOp(request.op)) return this.#control[request.op](request.args);
    if (this.#closing !== null) throw new SessionDBError("UNAVAILABLE", "the daemon is shutting down");
    if (this.#writer.queueDepth + this.#readsQueued >= this.options.maxQueue) {
      throw new SessionDBError("OVERLOADED", `the daemon has ${this.options.maxQueue} requests queued; retry later`);
    }
    const kind = OPERATION_KINDS[request.op];
    const params = parseOperation(request.op, request.args);
    if (kind === "write") {
      if (this.#writer.newerVersion !== null) throw newerSchemaError(this.options.path, this.#writer.newerVersion, request.op);
      const deadline = Date.now() + (request.timeoutMs ?? this.options.requestTimeoutMs);
      return this.#writer.write(request.op as WriteOpName, params, deadline);
    }
    if (kind === "read") return this.#read(request.op as ReadOpName, params);
    return this.#stream(request.op, params, request.id, connection);
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
}

/**
 * The identity of the database file, created (empty, private) if missing. `serve` needs to write
 * the file and its directory (for `-wal` and `-shm`): it refuses a file it can only read, rather
 * than start and fail every write.
 */
function servableFile(path: string): FileIdentity {
  try {
    createPrivateFile(path);
  } catch (err) {
    throw cannotServe(path, err);
  }
  for (const target of [path, dirname(path)]) {
    try {
      accessSync(target, constants.R_OK | constants.W_OK);
    } catch (err) {
      throw cannotServe(target, err);
    }
  }
  const identity = fileIdentity(path);
  if (identity === null) throw new SessionDBError("IO", `${path} disappeared while the daemon was starting`);
  return identity;
}

/** An I/O failure opening the database (a full disk, a damaged file) says which file. */
function namingThePath(err: unknown, path: string): unknown {
  if (!(err instanceof SessionDBError) || (err.code !== "IO" && err.code !== "CORRUPT") || err.message.includes(path)) return err;
  return new SessionDBError(err.code, `${path}: ${err.message}`, { cause: err });
}

function cannotServe(path: string, err: unknown): SessionDBError {
  const reason = (err as NodeJS.ErrnoException).code ?? String(err);
  return new SessionDBError(
    "IO",
    `cannot serve ${path}: this user (uid ${process.getuid?.() ?? "?"}) cannot write it (${reason}); the daemon needs to write the database and its directory, and does not start read-only (readers can open it with mode "direct")`,
    { cause: err },
  );
}

function memory(): DaemonStats["memory"] {
  const { rss, heapUsed, external, arrayBuffers } = process.memoryUsage();
  return { rss, heapUsed, external, arrayBuffers };
}

async function waitFor(condition: () => boolean, maxMs: number): Promise<void> {
  const until = Date.now() + maxMs;
  while (!condition() && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
}

import type { Socket } from "node:net";
import { dirname } from "node:path";
import { SessionDBError } from "../errors.js";
import { writeRefusal } from "../engine/file-ownership.js";
import { makePrivateDir } from "../engine/private-files.js";
import type { DaemonStats } from "../protocol/control.js";
import { VERSION } from "../version.js";
import { ClientConnection } from "./client-connection.js";
import { resolveDaemonOptions, type DaemonOptions, type ResolvedDaemonOptions } from "./daemon-options.js";
import type { FileIdentity } from "../file-identity.js";
import { identityLockPath, identitySocketPath, privateRuntimeDir } from "../socket-path.js";
import { acquireInstanceLock, type InstanceLock } from "./instance-lock.js";
import { DaemonSocket } from "./daemon-socket.js";
import { FileWatch } from "./file-watch.js";
import { walSize } from "./wal-guard.js";
import { controlHandlers } from "./control-handlers.js";
import { closeWhenIdle } from "./idle-exit.js";
import { RequestBudget } from "./request-budget.js";
import { RequestDispatch } from "./request-dispatch.js";
import { servableFile } from "./servable-file.js";
import { BodyPool } from "../protocol/body-pool.js";
import type { DaemonEngine, DaemonReaders, DaemonWriter } from "./daemon-engine.js";
import { startSqliteEngine } from "./sqlite-engine.js";
import { startPgEngine } from "../pg/pg-daemon-engine.js";
import { isPostgresUrl } from "../pg/pg-url.js";

export type { DaemonOptions } from "./daemon-options.js";

/**
 * The daemon (SPEC §5): one writer with group commit, a pool of readers, and the Unix socket.
 * The writer and readers are the engine's: threads over the SQLite file, or connections to
 * PostgreSQL. `Daemon.start` returns once it is listening; `close()` drains and stops it.
 */
export class Daemon {
  readonly options: ResolvedDaemonOptions;
  /** The lock beside the database's name, then (a file) the one under its identity. Release is idempotent. */
  readonly #locks: readonly InstanceLock[];
  /** The served file's device and inode; null for PostgreSQL, which has no file. */
  readonly #identity: FileIdentity | null;
  readonly #engine: DaemonEngine;
  readonly #writer: DaemonWriter;
  readonly #readers: DaemonReaders;
  /** The socket of SPEC §5, then (a file) the identity socket, where clients opening another name look. */
  #listening: DaemonSocket[] = [];
  #fileWatch: FileWatch | null = null;
  readonly #connections = new Set<ClientConnection>();
  readonly #sockets = new Set<Socket>();
  readonly #startedAt = Date.now();
  readonly #dispatch: RequestDispatch;
  /** Set when the path stopped naming the file served: the daemon stops. */
  #fileLost: "replaced" | "removed" | null = null;
  readonly #memory: { budget: RequestBudget; bodies: BodyPool };
  /** Enforces the connections' time limits (incomplete frames, idle connections). */
  readonly #sweeper: NodeJS.Timeout;
  #closing: Promise<void> | null = null;
  /** Resolves when the daemon has stopped (after `close()` or a `shutdown` request). */
  readonly closed: Promise<void>;
  #resolveClosed!: () => void;

  private constructor(options: ResolvedDaemonOptions, locks: readonly InstanceLock[], identity: FileIdentity | null, engine: DaemonEngine) {
    const { writer, readers } = engine;
    this.options = options;
    this.#engine = engine;
    this.#locks = locks;
    this.#identity = identity;
    this.#writer = writer;
    this.#readers = readers;
    this.closed = new Promise((resolve) => (this.#resolveClosed = resolve));
    const control = controlHandlers({
      database: options.files.db,
      engine,
      faultInjection: options.faultInjection,
      writer,
      readers,
      stats: () => this.stats(),
      clients: () => this.#connections.size,
      close: () => this.close(),
    });
    this.#dispatch = new RequestDispatch(options, engine, control, () => this.#closing !== null);
    this.#memory = { budget: new RequestBudget(options.maxRequestBytesTotal), bodies: new BodyPool(options.maxRequestBytesTotal) };
    this.#sweeper = setInterval(() => {
      const now = Date.now();
      for (const connection of this.#connections) connection.sweep(now);
    }, Math.min(1000, options.frameTimeoutMs / 2, options.idleConnectionTimeoutMs / 2));
    this.#sweeper.unref();
  }

  static async start(options: DaemonOptions = {}): Promise<Daemon> {
    const resolved = resolveDaemonOptions(options);
    const { files } = resolved;
    const postgres = isPostgresUrl(resolved.path);
    // A PostgreSQL database's lock and socket sit in the private runtime directory (clients never create it).
    if (postgres) privateRuntimeDir();
    else {
      // Before anything is created beside it: another user's file (or one others may write) is never served.
      const notOurs = writeRefusal(resolved.path);
      if (notOurs !== null) throw new SessionDBError("PERMISSION", `cannot serve: ${notOurs.message}`);
      makePrivateDir(dirname(resolved.path));
    }
    const locks = [await acquireInstanceLock(files.lock, files.socket, files.db)];
    let engine: DaemonEngine | undefined;
    try {
      let identity: FileIdentity | null = null;
      if (!postgres) {
        // Keyed by the file, not its name: a second daemon on a hard link of it must not start.
        identity = servableFile(files.db);
        privateRuntimeDir();
        locks.push(await acquireInstanceLock(identityLockPath(identity), identitySocketPath(identity), files.db));
      }
      engine = identity === null
        ? await startPgEngine(resolved)
        : await startSqliteEngine(resolved, identity).catch((err: unknown) => {
          throw namingThePath(err, resolved.path);
        });
      const daemon = new Daemon(resolved, locks, identity, engine);
      try {
        await daemon.#listen();
      } catch (err) {
        for (const socket of daemon.#listening) await socket.close();
        throw err;
      }
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
      database: this.options.files.db,
      engine: this.#engine.engine,
      socket: this.options.socketPath,
      readOnly: this.#engine.readOnly,
      fileSchemaVersion: this.#engine.fileSchemaVersion,
      uptimeS: (Date.now() - this.#startedAt) / 1000,
      clients: this.#connections.size,
      walBytes: walSize(this.options.files.wal),
      queueDepth: this.#dispatch.queueDepth,
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

  /**
   * Closes every connection to the file: the readers first (a reader still ending a stopped read
   * would keep the writer's final TRUNCATE checkpoint from emptying the WAL), then the writer,
   * which lets queued writes finish and checkpoints.
   */
  async #release(): Promise<void> {
    await this.#readers.close();
    await this.#writer.close();
  }

  async #listen(): Promise<void> {
    const accept = (socket: Socket) => this.#accept(socket);
    const identity = this.#identity;
    const paths = identity === null ? [this.options.socketPath] : [this.options.socketPath, identitySocketPath(identity)];
    for (const path of paths) {
      this.#listening.push(await DaemonSocket.listen(path, accept));
    }
    // PostgreSQL has no file to be replaced under the daemon.
    if (identity === null) return;
    this.#fileWatch = new FileWatch(this.options.path, identity, (how) => {
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
        maxRequestBytes: this.options.maxRequestBytesPerConnection,
        frameTimeoutMs: this.options.frameTimeoutMs,
        idleTimeoutMs: this.options.idleConnectionTimeoutMs,
      },
      this.#memory,
      (request, conn, receivedAt) => this.#dispatch.handle(request, conn, receivedAt),
      this.options.log,
    );
    this.#connections.add(connection);
    socket.on("close", () => {
      this.#sockets.delete(socket);
      this.#connections.delete(connection);
    });
  }
}

/** An I/O failure opening the database (a full disk, a damaged file) says which file. */
function namingThePath(err: unknown, path: string): unknown {
  if (!(err instanceof SessionDBError) || (err.code !== "IO" && err.code !== "CORRUPT") || err.message.includes(path)) return err;
  return new SessionDBError(err.code, `${path}: ${err.message}`, { cause: err });
}

function memory(): DaemonStats["memory"] {
  const { rss, heapUsed, external, arrayBuffers } = process.memoryUsage();
  return { rss, heapUsed, external, arrayBuffers };
}

async function waitFor(condition: () => boolean, maxMs: number): Promise<void> {
  const until = Date.now() + maxMs;
  while (!condition() && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
}

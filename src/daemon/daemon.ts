import type { Socket } from "node:net";
import { dirname } from "node:path";
import { invalidArgument, SessionDBError } from "../errors.js";
import { writeRefusal } from "../sqlite/file-ownership.js";
import { makePrivateDir } from "../sqlite/private-files.js";
import type { DaemonStats, HealthResult } from "../protocol/control.js";
import { SCHEMA_VERSION } from "../sqlite/schema.js";
import { RequestCounts } from "./request-counts.js";
import { isWriteOp } from "../operation-catalogue.js";
import type { MetricsServer } from "./metrics-server.js";
import { VERSION } from "../version.js";
import { ClientConnection, type RequestHandler } from "./client-connection.js";
import { resolveDaemonOptions, type DaemonOptions, type ResolvedDaemonOptions } from "./daemon-options.js";
import type { FileIdentity } from "../file-identity.js";
import { identityLockPath, identitySocketPath, privateRuntimeDir, runtimeDirPath } from "../socket-path.js";
import { acquireFileGuard, acquireInstanceLock, InstanceLock } from "./instance-lock.js";
import { sweepStaleIdentityLocks } from "../sqlite/stale-locks.js";
import { DaemonSocket } from "./daemon-socket.js";
import { FileWatch } from "./file-watch.js";
import { DirectoryWatch } from "./directory-watch.js";
import { walSize } from "./wal-guard.js";
import { controlHandlers } from "./control-handlers.js";
import { IdleExit } from "./idle-exit.js";
import { RequestBudget } from "./request-budget.js";
import { RequestDispatch } from "./request-dispatch.js";
import { WatchHub } from "./watch-hub.js";
import { servableFile } from "./servable-file.js";
import { BodyPool } from "../protocol/body-pool.js";
import type { DaemonEngine, DaemonReaders, DaemonWriter, SnapshotStats } from "./daemon-engine.js";
import { startSqliteEngine } from "./sqlite-engine.js";
import { defaultSpoolDir } from "../spool/spool-file.js";
import { SpoolReplayer } from "./spool-replayer.js";

export type { DaemonOptions } from "./daemon-options.js";

/**
 * The daemon (SPEC §5): one writer with group commit, a pool of readers, and the Unix socket.
 * The writer and readers are the engine's: threads over the SQLite file, or connections to
 * PostgreSQL. `Daemon.start` returns once it is listening; `close()` drains and stops it.
 */
export class Daemon {
  readonly options: ResolvedDaemonOptions;
  /**
   * The lock beside the database's name, then (a file) the guard on the file itself
   * (file-guard.ts; a lock file under its identity where flock(1) is missing). Release is idempotent.
   */
  readonly #locks: Array<{ release(): void }>;
  /** The served file's device and inode; null for PostgreSQL, which has no file. */
  readonly #identity: FileIdentity | null;
  readonly #engine: DaemonEngine;
  readonly #writer: DaemonWriter;
  readonly #readers: DaemonReaders;
  /** The socket of SPEC §5, then (a file) the identity socket, where clients opening another name look. */
  #listening: DaemonSocket[] = [];
  #fileWatch: FileWatch | null = null;
  #metrics: MetricsServer | null = null;
  /** Makes the sockets and lock files again when someone removes them (or their folder). */
  #repairTimer: NodeJS.Timeout | null = null;
  #repairing = false;
  #repairScheduled = false;
  /** Paths whose repair failed, said once each until it succeeds. */
  readonly #repairFailed = new Set<string>();
  /**
   * The folders of the database, its sockets and lock files, watched for the file watch, the WAL
   * guard and the repair, so that none of them polls often.
   */
  readonly #directory: DirectoryWatch;
  /** Set with `idleExitMs`: stops the daemon once no client has been connected that long. */
  #idleExit: IdleExit | null = null;
  readonly #connections = new Set<ClientConnection>();
  readonly #sockets = new Set<Socket>();
  readonly #startedAt = Date.now();
  readonly #dispatch: RequestDispatch;
  readonly #watches: WatchHub;
  readonly #requests = new RequestCounts();
  /** Set when the path stopped naming the file served, or its WAL was removed or truncated: the daemon stops. */
  #fileLost: "replaced" | "removed" | "wal" | null = null;
  readonly #memory: { budget: RequestBudget; bodies: BodyPool };
  /** Enforces the connections' time limits (incomplete frames, idle connections); runs only while there are connections. */
  #sweeper: NodeJS.Timeout | null = null;
  /** Ends the writer thread once no client has been connected for `writerIdleMs` (runs only while there is none). */
  #writerIdleTimer: NodeJS.Timeout | null = null;
  #closing: Promise<void> | null = null;
  /** Replays this user's spool of the database (docs/spool.md); null while the database is read-only. */
  #spool: SpoolReplayer | null = null;
  /** Resolves when the daemon has stopped (after `close()` or a `shutdown` request). */
  readonly closed: Promise<void>;
  #resolveClosed!: () => void;

  private constructor(options: ResolvedDaemonOptions, locks: Array<{ release(): void }>, identity: FileIdentity | null, engine: DaemonEngine, directory: DirectoryWatch) {
    const { writer, readers } = engine;
    this.options = options;
    this.#directory = directory;
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
      health: () => this.health(),
      clients: () => this.#connections.size,
      close: () => this.close(),
    });
    this.#watches = new WatchHub(engine.feed, options);
    this.#dispatch = new RequestDispatch(options, engine, control, () => this.#closing !== null, this.#watches);
    this.#memory = { budget: new RequestBudget(options.maxRequestBytesTotal), bodies: new BodyPool(options.maxRequestBytesTotal) };
    if (writer.stopIdle !== undefined) writer.onWake = () => this.#armWriterIdle();
    void engine.filesLost?.then((why) => {
      // Found while stopping too (the writer checks before its last checkpoint): still a failure.
      this.#fileLost ??= "wal";
      options.log(`${why}; stopping (exit 1, so a service restarts the daemon on whole files)`);
      void this.close();
    });
  }

  /** Runs the sweeper while there are connections, and tells the idle exit how many there are. */
  #clientsChanged(): void {
    const count = this.#connections.size;
    if (count > 0 && this.#sweeper === null && this.#closing === null) {
      this.#sweeper = setInterval(() => {
        const now = Date.now();
        for (const connection of this.#connections) connection.sweep(now);
      }, Math.min(1000, this.options.frameTimeoutMs / 2, this.options.idleConnectionTimeoutMs / 2));
      this.#sweeper.unref();
    } else if (count === 0 && this.#sweeper !== null) {
      clearInterval(this.#sweeper);
      this.#sweeper = null;
    }
    this.#idleExit?.clients(count);
    if (count === 0) this.#armWriterIdle();
    else if (this.#writerIdleTimer !== null) {
      clearTimeout(this.#writerIdleTimer);
      this.#writerIdleTimer = null;
    }
  }

  /**
   * No client is connected: the writer thread is ended `writerIdleMs` from now unless one comes
   * (issue 29: an idle daemon holds no worker thread). Armed again when the writer starts without
   * a client (a spool replay, the WAL guard), and while something keeps it busy.
   */
  #armWriterIdle(): void {
    const ms = this.options.writerIdleMs;
    if (ms === 0 || this.#writer.stopIdle === undefined || this.#closing !== null || this.#connections.size > 0) return;
    if (this.#writerIdleTimer !== null) clearTimeout(this.#writerIdleTimer);
    this.#writerIdleTimer = setTimeout(() => void this.#stopWriterIfIdle(), ms);
    this.#writerIdleTimer.unref();
  }

  /** Nothing in flight (no client, no spool replay pending, no export): the writer ends, checkpointed. */
  async #stopWriterIfIdle(): Promise<void> {
    this.#writerIdleTimer = null;
    if (this.#connections.size > 0 || this.#closing !== null) return;
    const busy = this.#spool?.pending === true || this.#engine.snapshots.stats().open > 0;
    const stopped = !busy && (await this.#writer.stopIdle!());
    if (!stopped) this.#armWriterIdle();
  }

  static async start(options: DaemonOptions = {}): Promise<Daemon> {
    const resolved = resolveDaemonOptions(options);
    const { files } = resolved;
    const postgres = resolved.engine === "postgres";
    // A PostgreSQL database's lock and socket sit in the private runtime directory (clients never create it).
    if (postgres) privateRuntimeDir();
    else {
      // Before anything is created beside it: another user's file (or one others may write) is never served.
      const notOurs = writeRefusal(resolved.path);
      if (notOurs !== null) throw new SessionDBError("PERMISSION", `cannot serve: ${notOurs.message}`);
      makePrivateDir(dirname(resolved.path));
    }
    const locks: Array<{ release(): void }> = [await acquireInstanceLock(files.lock, files.socket, files.db)];
    let engine: DaemonEngine | undefined;
    const directory = new DirectoryWatch();
    try {
      let identity: FileIdentity | null = null;
      if (!postgres) {
        // Keyed by the file, not its name: a second daemon on a hard link of it must not start.
        identity = servableFile(files.db);
        privateRuntimeDir();
        const guard = await acquireFileGuard(files.db, identity, identitySocketPath(identity));
        if (guard !== null) {
          locks.push(guard);
        } else {
          resolved.log("flock(1) (util-linux) cannot be run here: one daemon per file is guarded by a lock file in the runtime folder only, which removing that folder defeats");
          locks.push(await acquireInstanceLock(identityLockPath(identity), identitySocketPath(identity), files.db));
        }
      }
      // PostgreSQL's engine is loaded only for a PostgreSQL database: a module once loaded stays in
      // the heap of this long-lived process, idle or not.
      engine = identity === null
        ? await (await import("./pg-daemon-engine.js")).startPgEngine(resolved)
        : await startSqliteEngine(resolved, identity, directory).catch((err: unknown) => {
          throw namingThePath(err, resolved.path);
        });
      const daemon = new Daemon(resolved, locks, identity, engine, directory);
      try {
        await daemon.#listen();
      } catch (err) {
        for (const socket of daemon.#listening) await socket.close();
        throw err;
      }
      const passed = resolved.listenFd === null ? "" : ` (the socket systemd passed, fd ${resolved.listenFd})`;
      resolved.log(`listening on ${resolved.socketPath}${passed} for ${resolved.files.db} (pid ${process.pid}, ${engine.description})`);
      if (resolved.metrics !== null) {
        // Loaded only when asked for: node:http is a large part of Node's own modules.
        const { MetricsServer } = await import("./metrics-server.js");
        daemon.#metrics = await MetricsServer.listen(resolved.metrics, () => daemon.health()).catch(async (err: unknown) => {
          await daemon.close();
          throw invalidArgument(`--metrics ${resolved.metrics!.host}:${resolved.metrics!.port}: ${(err as Error).message}`);
        });
        resolved.log(`metrics on ${daemon.#metrics.url}/metrics and ${daemon.#metrics.url}/health`);
      }
      if (engine.readOnly) {
        resolved.log(`serving read-only: the database has schema version ${engine.fileSchemaVersion}, newer than this sessiondb's; writes fail with SCHEMA`);
      }
      if (resolved.idleExitMs !== null) {
        const idleMs = resolved.idleExitMs;
        daemon.#idleExit = new IdleExit(idleMs, () => {
          resolved.log(`no client for ${idleMs / 1000} s (--idle-exit): stopping`);
          void daemon.close();
        });
      }
      if (!postgres) setImmediate(() => daemon.#sweepStaleLocks());
      if (!engine.readOnly) {
        daemon.#spool = new SpoolReplayer(files.db, defaultSpoolDir(), engine.writer, resolved.requestTimeoutMs, resolved.log);
        daemon.#spool.start();
      }
      // A daemon no client ever reaches ends its writer thread too.
      daemon.#armWriterIdle();
      return daemon;
    } catch (err) {
      directory.close();
      engine?.stopHousekeeping();
      await engine?.writer.close();
      await engine?.readers.close();
      for (const lock of locks) lock.release();
      throw err;
    }
  }

  /**
   * True once the daemon stopped because another file took its file's path, or its `-wal` or
   * `-shm` was removed or truncated under it (a failure: `serve` exits 1, so a service restarts it).
   */
  get fileReplaced(): boolean {
    return this.#fileLost === "replaced" || this.#fileLost === "wal";
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
      readers: withSnapshots(this.#readers.stats(), this.#engine.snapshots.stats()),
      watch: this.#watches.stats(),
      memory: { ...memory(), requestBytes: this.#memory.budget.used },
    };
  }

  /** Counts an answered request, and logs it when it was slow (a write, with its group commit's size). */
  #answered(op: string, code: string, receivedAt: number): void {
    this.#requests.record(op, code);
    const durationMs = Date.now() - receivedAt;
    // A watch lasts as long as its subscriber wants: never slow.
    if (durationMs <= this.options.slowRequestMs || op === "watch") return;
    // Settled as its batch's outcomes arrived, before any other batch: the last one is its own.
    const batch = isWriteOp(op) && code === "OK" ? this.#writer.histograms().lastBatchSize : null;
    this.options.log(`slow request: ${op} took ${durationMs} ms (${code})${batch === null ? "" : `, in a group commit of ${batch}`}`, {
      level: "warn", op, code, durationMs, ...(batch === null ? {} : { batch }),
    });
  }

  /** What `health` answers: the figures of `/metrics`. */
  health(): HealthResult {
    const s = this.stats();
    const { batchSize, commitSeconds, lastCommitAt } = this.#writer.histograms();
    return {
      status: s.readOnly ? "read-only" : "ok",
      pid: s.pid,
      version: s.version,
      engine: s.engine,
      database: s.database,
      uptimeS: s.uptimeS,
      schemaVersion: SCHEMA_VERSION,
      fileSchemaVersion: s.fileSchemaVersion,
      readOnly: s.readOnly,
      clients: s.clients,
      queueDepth: s.queueDepth,
      readers: { threads: s.readers.threads, busy: s.readers.inFlight, queued: s.readers.queued },
      walBytes: s.walBytes,
      checkpoints: { passive: s.writer.checkpoints.passive, truncate: s.writer.checkpoints.truncate },
      lastCommitAgeS: lastCommitAt === null ? null : (Date.now() - lastCommitAt) / 1000,
      writer: { batches: s.writer.batches, writes: s.writer.writes, restarts: s.writer.restarts, thread: s.writer.thread, idleStops: s.writer.idleStops },
      batchSize,
      commitSeconds,
      requests: this.#requests.snapshot(),
      memory: s.memory,
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
    // Subscriptions never finish by themselves: they end now (UNAVAILABLE), so connections can.
    this.#watches.close();
    this.#engine.stopHousekeeping();
    // Not waited for: a record in the writer's queue is finished with the rest; the next is not started.
    void this.#spool?.close();
    if (this.#repairTimer !== null) clearTimeout(this.#repairTimer);
    this.#idleExit?.stop();
    if (this.#writerIdleTimer !== null) clearTimeout(this.#writerIdleTimer);
    this.#fileWatch?.stop();
    this.#directory.close();
    await this.#metrics?.close();
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
    if (this.#sweeper !== null) clearInterval(this.#sweeper);
    for (const socket of this.#sockets) socket.destroy();
    await serverClosed;
    if (!releaseFirst) await this.#release();
    for (const lock of this.#locks) lock.release();
    log(this.options.listenFd === null ? "stopped (checkpointed, socket removed)" : "stopped (checkpointed; the socket is systemd's: its next connection starts the daemon again)");
    this.#resolveClosed();
  }

  /**
   * Closes every connection to the file: the readers first (a reader still ending a stopped read
   * would keep the writer's final TRUNCATE checkpoint from emptying the WAL), then the writer,
   * which lets queued writes finish and checkpoints.
   */
  async #release(): Promise<void> {
    await this.#engine.snapshots.close();
    await this.#readers.close();
    await this.#writer.close();
  }

  async #listen(): Promise<void> {
    const identity = this.#identity;
    const paths = identity === null ? [this.options.socketPath] : [this.options.socketPath, identitySocketPath(identity)];
    for (const [i, path] of paths.entries()) {
      const fd = i === 0 ? this.options.listenFd : null;
      this.#listening.push(await (fd === null ? DaemonSocket.listen(path, this.#acceptor) : DaemonSocket.adopt(fd, path, this.#acceptor)));
    }
    // Told at once when one of them is removed; polled slowly besides (often while a folder cannot be watched).
    for (const path of [...paths, ...this.#locks.flatMap((lock) => (lock instanceof InstanceLock ? [lock.path] : []))]) {
      this.#directory.on(path, () => this.#repairSoon());
    }
    this.#pollRepair();
    // PostgreSQL has no file to be replaced under the daemon.
    if (identity === null) return;
    this.#fileWatch = new FileWatch(this.options.path, identity, this.#directory, (how) => {
      this.#fileLost = how;
      this.options.log(
        how === "replaced"
          ? `${this.options.path} was replaced: it no longer names the file this daemon serves; stopping (clients go on with the file now there)`
          : `${this.options.path} was removed; stopping`,
      );
      void this.close();
    });
  }

  readonly #acceptor = (socket: Socket): void => this.#accept(socket);

  /** Every connection's requests go to the dispatch; their replies are counted (and the slow ones logged). */
  readonly #handler: RequestHandler = {
    handle: (request, connection, receivedAt) => this.#dispatch.handle(request, connection, receivedAt),
    answered: (op, outcome, receivedAt) => this.#answered(op, outcome, receivedAt),
  };

  #pollRepair(): void {
    this.#repairTimer = setTimeout(() => {
      void this.#repair().finally(() => {
        if (this.#closing === null) this.#pollRepair();
      });
    }, this.#directory.watching ? REPAIR_SAFETY_POLL_MS : REPAIR_INTERVAL_MS);
    this.#repairTimer.unref();
  }

  /**
   * A watched socket or lock file changed: repaired REPAIR_INTERVAL_MS later, once however many
   * events came, as the poll did. Not at once: an `rm -rf` of their folder, still removing, would
   * find the file made again and fail (ENOTEMPTY).
   */
  #repairSoon(): void {
    if (this.#repairScheduled || this.#closing !== null) return;
    this.#repairScheduled = true;
    setTimeout(() => {
      this.#repairScheduled = false;
      void this.#repair();
    }, REPAIR_INTERVAL_MS).unref();
  }

  /**
   * A socket or lock file removed under the running daemon — one by one, or with the runtime
   * folder (a logout, a /tmp cleaner) — is made again at once, so clients opening the file by any
   * name keep finding the daemon. (One daemon per file never depended on them: the guard on the
   * file itself cannot be removed.) Something else put at the path is left alone, said once.
   */
  async #repair(): Promise<void> {
    if (this.#repairing || this.#closing !== null) return;
    this.#repairing = true;
    try {
      for (const [i, socket] of this.#listening.entries()) {
        if (socket.present) continue;
        await this.#again(socket.path, async () => {
          if (dirname(socket.path) === runtimeDirPath()) privateRuntimeDir();
          const fresh = await DaemonSocket.listen(socket.path, this.#acceptor);
          if (this.#closing !== null) {
            await fresh.close();
            return;
          }
          this.#listening[i] = fresh;
          void socket.close(); // its connections go on; it accepts no more
        });
      }
      for (const [i, lock] of this.#locks.entries()) {
        if (!(lock instanceof InstanceLock) || lock.present || this.#closing !== null) continue;
        await this.#again(lock.path, async () => {
          if (dirname(lock.path) === runtimeDirPath()) privateRuntimeDir();
          this.#locks[i] = InstanceLock.acquire(lock.path);
          lock.release(); // the removed file's: nothing left to remove
        });
      }
    } catch (err) {
      // Never a reason to stop serving (an unhandled rejection would end the daemon).
      this.options.log(`checking the sockets and lock files failed: ${(err as Error).message}`);
    } finally {
      this.#repairing = false;
      // A folder made again is watched again.
      if (this.#closing === null) this.#directory.rewatch();
    }
  }

  async #again(path: string, make: () => Promise<void>): Promise<void> {
    try {
      await make();
      this.options.log(`${path} was removed: made it again`);
      this.#repairFailed.delete(path);
    } catch (err) {
      if (!this.#repairFailed.has(path)) this.options.log(`${path} was removed and cannot be made again (${(err as Error).message}); trying again`);
      this.#repairFailed.add(path);
    }
  }

  /** Stale lock files of daemons that are gone (stale-locks.ts), removed once at start. */
  #sweepStaleLocks(): void {
    if (this.#closing !== null) return;
    try {
      const removed = sweepStaleIdentityLocks(runtimeDirPath());
      if (removed > 0) this.options.log(`removed ${removed} stale lock file(s) of daemons that are gone from ${runtimeDirPath()}`);
    } catch (err) {
      // Housekeeping only: never a reason to stop serving.
      this.options.log(`could not sweep stale lock files in ${runtimeDirPath()}: ${(err as Error).message}`);
    }
  }

  #accept(socket: Socket): void {
    // A client must not be served a file that is no longer at the path (its change may not have been reported yet).
    this.#fileWatch?.check();
    if (this.#closing !== null) {
      socket.destroy();
      return;
    }
    // Its thread starts while the client says hello: a request that comes first waits for it.
    this.#writer.wake?.();
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
      this.#handler,
      this.options.log,
    );
    this.#connections.add(connection);
    this.#clientsChanged();
    socket.on("close", () => {
      this.#sockets.delete(socket);
      this.#connections.delete(connection);
      this.#clientsChanged();
    });
  }
}

/** How soon the daemon makes a removed socket or lock file again; how often it checks, when a folder of theirs cannot be watched. */
const REPAIR_INTERVAL_MS = 250;
/** How often it checks anyway while their folders are watched (a removal is reported at once). */
const REPAIR_SAFETY_POLL_MS = 5000;

/** An I/O failure opening the database (a full disk, a damaged file) says which file. */
function namingThePath(err: unknown, path: string): unknown {
  if (!(err instanceof SessionDBError) || (err.code !== "IO" && err.code !== "CORRUPT") || err.message.includes(path)) return err;
  return new SessionDBError(err.code, `${path}: ${err.message}`, { cause: err });
}

/** The pages of streamed reads (each on a snapshot of its own, not a reader's) count as reads too. */
function withSnapshots(readers: DaemonStats["readers"], snapshots: SnapshotStats): DaemonStats["readers"] {
  return { ...readers, inFlight: readers.inFlight + snapshots.open, completed: readers.completed + snapshots.pagesRead };
}

function memory(): Omit<DaemonStats["memory"], "requestBytes"> {
  const { rss, heapUsed, external, arrayBuffers } = process.memoryUsage();
  return { rss, heapUsed, external, arrayBuffers };
}

async function waitFor(condition: () => boolean, maxMs: number): Promise<void> {
  const until = Date.now() + maxMs;
  while (!condition() && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
}

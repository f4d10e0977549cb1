import { connect, type Socket } from "node:net";
import { fromWireError, SessionDBError, toSessionDBError } from "../errors.js";
import type { ResolvedOptions } from "../options.js";
import { OPERATION_KINDS, type CallOpName, type OpName, type ParamsOf, type ResultOf, type StreamOpName } from "../operation-catalogue.js";
import { decodeBody, FrameDecoder } from "../protocol/frame-codec.js";
import { FrameWriter } from "../protocol/frame-writer.js";
import type { ControlArgs, ControlOp, ControlResult, DaemonControl, DaemonStats, FaultOp, HelloResult } from "../protocol/control.js";
import { PROTOCOL_VERSION } from "../protocol/messages.js";
import { Store } from "../store.js";
import { fileIdentity, sameFile } from "../file-identity.js";
import { userName } from "../user-name.js";
import { requestFrame, trimUndefined } from "./request-frame.js";
import { checkSocket, ForeignSocketError } from "./socket-trust.js";
import { argsForWire } from "./wire-args.js";
import { databaseIdentity } from "../socket-path.js";
import { isPostgresUrl } from "../pg/pg-url.js";
import type { Engine } from "../session-db.js";


/** Replies come from our own daemon: large results (an exported session) are allowed. */
const MAX_REPLY_FRAME_BYTES = 1024 * 1024 * 1024;
/** Extra time a sent request waits beyond the deadline it gave the daemon, so the daemon's own
 *  TIMEOUT (which guarantees the write was not applied) normally arrives first. */
const LOCAL_GRACE_MS = 2000;
/** The buffer replies are read into; larger frames are assembled from several reads. */
const READ_BUFFER_BYTES = 64 * 1024;
/** Export pages held for a slow consumer before the socket stops being read. */
const MAX_BUFFERED_CHUNKS = 4;

/** How often deadlines are checked. One sweep for all requests: a timer per request cost a third
 *  of a client's CPU per call when many processes each make one call at a time. */
const SWEEP_INTERVAL_MS = 50;

interface PendingRequest {
  op: OpName | ControlOp;
  args: unknown[];
  /** Handed to the socket: from then on the daemon may run it. */
  sent: boolean;
  /** A write whose reply does not come in time may or may not have been applied; a read changed nothing. */
  write: boolean;
  resolve(result: unknown): void;
  reject(err: SessionDBError): void;
  onChunk?: (items: unknown[]) => void;
  /** How long the request may take (or, streaming, each page), in ms. */
  timeoutMs: number;
  /** How long a sent request waits past its deadline for the daemon's own answer. */
  graceMs: number;
  /** Ms since the epoch; the daemon is told it too, and never starts the request after it. */
  deadline: number;
}

function unavailable(socketPath: string, why: string): SessionDBError {
  return new SessionDBError("UNAVAILABLE", `no sessiondb daemon answers on ${socketPath}: ${why}`);
}

/**
 * The `SessionDB` served by a daemon over its Unix socket: requests are pipelined and matched by
 * id, each with a deadline; `exportAll` streams in chunks, read only as fast as it is consumed.
 */
export class DaemonClient extends Store implements DaemonControl {
  readonly mode = "daemon" as const;
  readonly #options: ResolvedOptions;
  /** The socket the daemon was found on (its derived or its identity socket); reconnects use it too. */
  readonly #socketPath: string;
  #socket!: Socket;
  #writer!: FrameWriter;
  #decoder!: FrameDecoder;
  /** The daemon closed the connection for idleness: the next request opens a new one. */
  #dormant = false;
  /** Set while that new connection opens: requests wait unsent. */
  #reconnecting: Promise<void> | null = null;
  readonly #pending = new Map<number, PendingRequest>();
  /** Requests not yet handed to the socket, in order: it is backed up. */
  #unsent: number[] = [];
  #sweeper: NodeJS.Timeout | null = null;
  /** Resolves `close()` once no request is pending. */
  #idle: (() => void) | null = null;
  #nextId = 1;
  #lost: SessionDBError | null = null;
  #closed: Promise<void> | null = null;
  /** What the daemon said of itself on connecting. */
  server!: HelloResult;
  /** Resolves when the current connection has closed, whichever side closed it. */
  hungUp!: Promise<void>;

  private constructor(options: ResolvedOptions, socketPath: string) {
    super(options.files);
    this.#options = options;
    this.#socketPath = socketPath;
  }

  /**
   * Connects to the daemon on `socketPath` (default: the options' socket) and says hello; fails
   * with UNAVAILABLE when no daemon of this user serving this database answers there.
   */
  static async connect(options: ResolvedOptions, socketPath = options.socketPath): Promise<DaemonClient> {
    const client = new DaemonClient(options, socketPath);
    await client.#open();
    return client;
  }

  /**
   * Opens a connection to the daemon on the socket this client found it on (checked to be this
   * user's, and connected through the directory that check opened), makes it this client's, and
   * says hello on it first. Reconnecting takes the same path.
   */
  async #open(): Promise<void> {
    const options = this.#options;
    const socketPath = this.#socketPath;
    let socket: Socket | null = null;
    socket = await openSocket(options, socketPath, (bytes) => {
      if (socket === this.#socket) this.#onData(bytes);
    });
    socket.on("error", () => {
      // "close" follows and fails whatever is pending
    });
    socket.on("drain", () => this.#sendUnsent());
    let hungUp!: () => void;
    this.hungUp = new Promise((resolve) => (hungUp = resolve));
    socket.on("close", () => {
      hungUp();
      if (socket === this.#socket && this.#reconnecting === null && !this.#dormant) {
        this.#connectionLost(new SessionDBError("UNAVAILABLE", "the connection to the daemon was lost; a request in flight may or may not have been applied"));
      }
    });
    this.#socket = socket;
    this.#writer = new FrameWriter(socket);
    this.#decoder = new FrameDecoder(MAX_REPLY_FRAME_BYTES);
    try {
      // The daemon answers hello itself, at once: no grace beyond the connect timeout.
      const hello = (await this.#request("hello", [{ protocol: PROTOCOL_VERSION }], options.connectTimeoutMs, undefined, 0, true)) as HelloResult;
      if (!servesThis(hello.database, options.path)) {
        throw unavailable(socketPath, `that daemon serves ${hello.database}, not ${databaseIdentity(options.path)}`);
      }
      this.server = hello;
    } catch (err) {
      socket.destroy();
      // Silence, another protocol or a lost connection: either way no daemon answers (so "auto" falls back).
      throw err instanceof SessionDBError && err.code === "UNAVAILABLE" ? err : unavailable(socketPath, (err as Error).message);
    }
  }

  /** The database behind the daemon. */
  get engine(): Engine {
    return this.server.engine ?? "sqlite";
  }

  /** The handle's control of its daemon: this client itself. */
  get daemon(): DaemonControl {
    return this;
  }

  /**
   * The daemon closed this connection for idleness (its goodbye frame): it read nothing sent after
   * it, so every request still waiting for an answer was never started. They are sent again, in
   * order, on a new connection (opened at once if any waits, else by the next request); the caller
   * sees nothing of it.
   */
  #onGoodbye(): void {
    for (const p of this.#pending.values()) p.sent = false;
    this.#unsent = [...this.#pending.keys()];
    this.#dormant = true;
    if (this.#pending.size > 0) this.#wakeUp();
  }

  #wakeUp(): void {
    this.#dormant = false;
    this.#reconnecting = this.#open().then(
      () => {
        this.#reconnecting = null;
        this.#sendUnsent();
      },
      (err: SessionDBError) => {
        this.#reconnecting = null;
        this.#connectionLost(err);
      },
    );
  }

  /** False once the connection to the daemon is lost; every call then fails with UNAVAILABLE. */
  get connected(): boolean {
    return this.#lost === null;
  }

  protected call<K extends CallOpName>(name: K, args: ParamsOf<K>): Promise<ResultOf<K>> {
    let wire: unknown[];
    try {
      wire = argsForWire(name, trimUndefined(args));
    } catch (err) {
      return Promise.reject(toSessionDBError(err));
    }
    // The daemon answers each operation with what the catalogue says it returns.
    return this.#request(name, wire, this.#options.requestTimeoutMs) as Promise<ResultOf<K>>;
  }

  /** Asks the daemon who it is. */
  hello(): Promise<HelloResult> {
    return this.#control("hello", { protocol: PROTOCOL_VERSION });
  }

  /** The round trip with no database work. */
  ping(): Promise<"pong"> {
    return this.#control("ping");
  }

  /** The daemon's figures: clients, queue, group commit, readers, WAL, memory. */
  stats(): Promise<DaemonStats> {
    return this.#control("stats");
  }

  /** Asks the daemon to stop as on SIGTERM: it answers, finishes what is queued and exits. */
  async shutdown(): Promise<void> {
    await this.#control("shutdown");
  }

  /** The reliability tests' fault injection (refused unless the daemon runs with it on). */
  async fault<K extends FaultOp>(op: K, ...args: ControlArgs<K>): Promise<void> {
    await this.#control(op, ...args);
  }

  #control<K extends ControlOp>(op: K, ...args: ControlArgs<K>): Promise<ControlResult<K>> {
    // The daemon answers each control op with its documented result.
    return this.#request(op, trimUndefined(args), this.#options.requestTimeoutMs) as Promise<ControlResult<K>>;
  }

  protected async *stream<K extends StreamOpName>(name: K, args: ParamsOf<K>): AsyncIterable<ResultOf<K>> {
    const buffered: unknown[][] = [];
    let wake: (() => void) | null = null;
    let finished = false;
    let failure: SessionDBError | null = null;
    const done = this.#request(name, argsForWire(name, trimUndefined(args)), this.#options.requestTimeoutMs, (items) => {
      buffered.push(items);
      if (buffered.length >= MAX_BUFFERED_CHUNKS) this.#socket.pause();
      wake?.();
    }).then(
      () => {
        finished = true;
        wake?.();
      },
      (err: SessionDBError) => {
        failure = err;
        wake?.();
      },
    );
    try {
      for (;;) {
        const items = buffered.shift();
        if (items !== undefined) {
          if (buffered.length < MAX_BUFFERED_CHUNKS) this.#socket.resume();
          yield* items as Array<ResultOf<K>>;
          continue;
        }
        if (failure !== null) throw failure;
        if (finished) return;
        await new Promise<void>((resolve) => (wake = resolve));
        wake = null;
      }
    } finally {
      this.#socket.resume();
      void done;
    }
  }

  /** Waits for requests in flight, then closes the connection. Idempotent. */
  close(): Promise<void> {
    this.#closed ??= new Promise<void>((resolve) => {
      if (this.#pending.size === 0) resolve();
      else this.#idle = resolve;
    }).then(() => {
      this.#socket.end();
      this.#socket.destroy();
    });
    return this.#closed;
  }

  /** `first`: sent at once, ahead of requests waiting for the connection (the hello). */
  #request(
    op: OpName | ControlOp,
    args: unknown[],
    timeoutMs: number,
    onChunk?: (items: unknown[]) => void,
    graceMs = LOCAL_GRACE_MS,
    first = false,
  ): Promise<unknown> {
    if (this.#closed !== null) return Promise.reject(new SessionDBError("CLOSED", "this SessionDB handle is closed"));
    if (this.#lost !== null) return Promise.reject(this.#lost);
    const id = this.#nextId;
    this.#nextId = this.#nextId >= 0xffffffff ? 1 : this.#nextId + 1;
    return new Promise((resolve, reject) => {
      const write = (OPERATION_KINDS as Partial<Record<string, string>>)[op] === "write";
      const pending: PendingRequest = { op, args, sent: false, write, resolve, reject, timeoutMs, graceMs, deadline: Date.now() + timeoutMs };
      if (onChunk !== undefined) pending.onChunk = onChunk;
      this.#pending.set(id, pending);
      if (this.#dormant && !first) this.#wakeUp();
      if (first || (this.#reconnecting === null && this.#unsent.length === 0 && !this.#socket.writableNeedDrain)) this.#send(id, pending);
      else this.#unsent.push(id);
      if (this.#pending.has(id)) this.#startSweeper();
    });
  }

  /**
   * Hands a request to the socket with the time it has left. One whose deadline passed while it
   * waited here is answered TIMEOUT: it never left this process.
   */
  #send(id: number, pending: PendingRequest): void {
    const remainingMs = Math.ceil(pending.deadline - Date.now());
    let frame: Buffer;
    try {
      if (remainingMs <= 0) throw notSent(pending);
      frame = requestFrame(id, pending.op, pending.args, remainingMs, pending.deadline);
    } catch (err) {
      this.#forget(id);
      pending.reject(err as SessionDBError);
      return;
    }
    pending.sent = true;
    this.#writer.write(frame);
  }

  /** Sends what waited while the socket was backed up, until it is backed up again. */
  #sendUnsent(): void {
    while (this.#reconnecting === null && this.#unsent.length > 0 && !this.#socket.writableNeedDrain) {
      const id = this.#unsent.shift()!;
      const pending = this.#pending.get(id);
      if (pending !== undefined && !pending.sent) this.#send(id, pending);
    }
  }

  #onData(chunk: Buffer): void {
    let bodies: Buffer[];
    try {
      bodies = this.#decoder.push(chunk);
    } catch (err) {
      this.#connectionLost(err as SessionDBError);
      this.#socket.destroy();
      return;
    }
    for (const body of bodies) this.#onReply(decodeBody(body, true) as Record<string, unknown>);
  }

  #onReply(reply: Record<string, unknown>): void {
    const id = reply.id as number;
    const pending = this.#pending.get(id);
    if (pending === undefined) {
      // id 0: the daemon closes the connection: idle (CLOSED), or a frame it could not read.
      if (id === 0 && reply.ok === false) {
        const err = fromWireError(reply.error);
        if (err.code === "CLOSED") this.#onGoodbye();
        else this.#connectionLost(err);
      }
      return;
    }
    if (Array.isArray(reply.chunk)) {
      // A stream's deadline is for its first page; each page keeps it alive.
      pending.deadline = Date.now() + pending.timeoutMs;
      pending.onChunk?.(reply.chunk);
      return;
    }
    this.#forget(id);
    if (reply.ok === true) pending.resolve(reply.result);
    else pending.reject(fromWireError(reply.error));
  }

  #connectionLost(err: SessionDBError): void {
    this.#lost ??= err;
    for (const [id, p] of this.#pending) {
      this.#forget(id);
      p.reject(err);
    }
  }

  /** Drops a request that is answered or failed; the last one lets a pending `close()` go on. */
  #forget(id: number): void {
    this.#pending.delete(id);
    if (this.#pending.size === 0 && this.#idle !== null) {
      this.#idle();
      this.#idle = null;
    }
  }

  /** Checks deadlines while requests are pending; stops when none are. */
  #startSweeper(): void {
    if (this.#sweeper !== null) return;
    this.#sweeper = setInterval(() => {
      const now = Date.now();
      for (const [id, p] of this.#pending) {
        const unsent = !p.sent;
        if ((unsent ? p.deadline : p.deadline + p.graceMs) > now) continue;
        this.#forget(id);
        p.reject(unsent ? notSent(p) : unanswered(p));
      }
      if (this.#pending.size === 0 && this.#sweeper !== null) {
        clearInterval(this.#sweeper);
        this.#sweeper = null;
      }
    }, SWEEP_INTERVAL_MS);
    // The socket keeps the process alive while requests are pending; the sweep need not.
    this.#sweeper.unref();
  }
}

function notSent(p: PendingRequest): SessionDBError {
  return new SessionDBError("TIMEOUT", `${p.op} could not be sent within ${p.timeoutMs} ms (the connection to the daemon was backed up); it was not applied`);
}

/** A sent request's deadline passed without its answer: a write's fate is unknown, a read just timed out. */
function unanswered(p: PendingRequest): SessionDBError {
  const waited = p.timeoutMs + p.graceMs;
  return p.write
    ? new SessionDBError("OUTCOME_UNKNOWN", `${p.op} got no answer from the daemon within ${waited} ms: it may or may not have been applied; read before retrying`)
    : new SessionDBError("TIMEOUT", `${p.op} got no answer from the daemon within ${waited} ms`);
}

/**
 * A connected socket. Replies are read into one buffer of the connection's own (`onread`), not a
 * new one per read through the stream machinery: a client making one call at a time wakes for
 * every reply.
 */
function openSocket(options: ResolvedOptions, socketPath: string, onBytes: (bytes: Buffer) => void): Promise<Socket> {
  const trust = checkSocket(socketPath);
  if (!trust.ok) return Promise.reject(trust.foreign ? new ForeignSocketError(socketPath, trust.reason) : unavailable(socketPath, trust.reason));
  const onread = {
    buffer: Buffer.allocUnsafe(READ_BUFFER_BYTES),
    callback: (n: number, buf: Buffer) => {
      onBytes(buf.subarray(0, n));
      return true;
    },
  };
  return new Promise<Socket>((resolve, reject) => {
    const s = connect({ path: trust.connectPath, onread });
    const timer = setTimeout(() => {
      s.destroy();
      reject(unavailable(socketPath, `no answer within ${options.connectTimeoutMs} ms`));
    }, options.connectTimeoutMs);
    s.once("connect", () => {
      clearTimeout(timer);
      resolve(s);
    });
    s.once("error", (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      reject(
        err.code === "EACCES"
          ? new ForeignSocketError(socketPath, `it belongs to ${userName(trust.owner)}, whose daemon this user may not connect to (EACCES)`)
          : unavailable(socketPath, err.code ?? err.message),
      );
    });
  }).finally(() => trust.release());
}

/**
 * Whether a daemon saying it serves `served` serves the database at `path`: a PostgreSQL database
 * by its identity (the URL without its password); a file by its real path, or — opened under
 * another name (a hard link) — by being the same file (device and inode).
 */
function servesThis(served: string, path: string): boolean {
  const expected = databaseIdentity(path);
  if (served === expected) return true;
  return !isPostgresUrl(path) && sameFile(fileIdentity(served), fileIdentity(path));
}

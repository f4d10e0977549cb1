import { connect, type Socket } from "node:net";
import { fromWireError, SessionDBError, toSessionDBError } from "../errors.js";
import type { ResolvedOptions } from "../options.js";
import type { CallOpName, OpName, ParamsOf, ResultOf, StreamOpName } from "../operation-catalogue.js";
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


/** Replies come from our own daemon: large results (an exported session) are allowed. */
const MAX_REPLY_FRAME_BYTES = 1024 * 1024 * 1024;
/** Extra time a request waits locally beyond the deadline it gave the daemon, so the daemon's own
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
  op: string;
  resolve(result: unknown): void;
  reject(err: SessionDBError): void;
  onChunk?: (items: unknown[]) => void;
  /** How long the request may go without a reply (or, streaming, without a page). */
  patienceMs: number;
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
  readonly #socket: Socket;
  readonly #decoder = new FrameDecoder(MAX_REPLY_FRAME_BYTES);
  readonly #pending = new Map<number, PendingRequest>();
  #sweeper: NodeJS.Timeout | null = null;
  /** Resolves `close()` once no request is pending. */
  #idle: (() => void) | null = null;
  readonly #writer: FrameWriter;
  #nextId = 1;
  #lost: SessionDBError | null = null;
  #closed: Promise<void> | null = null;
  /** What the daemon said of itself on connecting. */
  server!: HelloResult;
  /** Resolves when the connection has closed, whichever side closed it. */
  readonly hungUp: Promise<void>;

  private constructor(socket: Socket, options: ResolvedOptions) {
    super(options.files);
    this.#socket = socket;
    this.#writer = new FrameWriter(socket);
    this.#options = options;
    socket.on("error", () => {
      // "close" follows and fails whatever is pending
    });
    this.hungUp = new Promise((resolve) => socket.once("close", () => resolve()));
    socket.on("close", () => this.#connectionLost(new SessionDBError("UNAVAILABLE", "the connection to the daemon was lost; a request in flight may or may not have been applied")));
  }

  /**
   * Connects to the daemon on `socketPath` (default: the options' socket) and says hello; fails
   * with UNAVAILABLE when no daemon of this user serving this file answers there.
   */
  static async connect(options: ResolvedOptions, socketPath = options.socketPath): Promise<DaemonClient> {
    const trust = checkSocket(socketPath);
    if (!trust.ok) throw trust.foreign ? new ForeignSocketError(socketPath, trust.reason) : unavailable(socketPath, trust.reason);
    // Replies are read into one buffer of the connection's own (`onread`), not a new one per read
    // through the stream machinery: a client making one call at a time wakes for every reply.
    let client: DaemonClient | null = null;
    const onread = { buffer: Buffer.allocUnsafe(READ_BUFFER_BYTES), callback: (n: number, buf: Buffer) => {
      if (client !== null) client.#onData(buf.subarray(0, n));
      return true;
    } };
    const socket = await new Promise<Socket>((resolve, reject) => {
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
    client = new DaemonClient(socket, options);
    try {
      // The daemon answers hello itself, at once: no grace beyond the connect timeout.
      const hello = (await client.#request("hello", [{ protocol: PROTOCOL_VERSION }], options.connectTimeoutMs, undefined, 0)) as HelloResult;
      if (hello.database !== options.path && !sameFile(fileIdentity(hello.database), fileIdentity(options.path))) {
        throw unavailable(socketPath, `that daemon serves ${hello.database}, not ${options.path}`);
      }
      client.server = hello;
      return client;
    } catch (err) {
      socket.destroy();
      // Silence, another protocol or a lost connection: either way no daemon answers (so "auto" falls back).
      throw err instanceof SessionDBError && err.code === "UNAVAILABLE" ? err : unavailable(socketPath, (err as Error).message);
    }
  }

  /** The handle's control of its daemon: this client itself. */
  get daemon(): DaemonControl {
    return this;
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

  #request(
    op: OpName | ControlOp,
    args: unknown[],
    timeoutMs: number,
    onChunk?: (items: unknown[]) => void,
    graceMs = LOCAL_GRACE_MS,
  ): Promise<unknown> {
    if (this.#closed !== null) return Promise.reject(new SessionDBError("CLOSED", "this SessionDB handle is closed"));
    if (this.#lost !== null) return Promise.reject(this.#lost);
    const id = this.#nextId;
    let frame: Buffer;
    try {
      frame = requestFrame(id, op, args, timeoutMs);
    } catch (err) {
      return Promise.reject(err);
    }
    this.#nextId = this.#nextId >= 0xffffffff ? 1 : this.#nextId + 1;
    const request = new Promise((resolve, reject) => {
      const patienceMs = timeoutMs + graceMs;
      const pending: PendingRequest = { op, resolve, reject, patienceMs, deadline: Date.now() + patienceMs };
      if (onChunk !== undefined) pending.onChunk = onChunk;
      this.#pending.set(id, pending);
      this.#startSweeper();
      this.#writer.write(frame);
    });
    return request;
  }

  #onData(chunk: Buffer): void {
    let bodies: Buffer[];
    try {
      bodies = this.#decoder.push(chunk, true);
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
      // id 0: the daemon rejected the connection itself (a frame it could not read).
      if (id === 0 && reply.ok === false) this.#connectionLost(fromWireError(reply.error));
      return;
    }
    if (Array.isArray(reply.chunk)) {
      // A stream's deadline is for its first page; each page keeps it alive.
      pending.deadline = Date.now() + pending.patienceMs;
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
        if (p.deadline > now) continue;
        this.#forget(id);
        p.reject(new SessionDBError("TIMEOUT", `${p.op} got no answer from the daemon within ${p.patienceMs} ms`));
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

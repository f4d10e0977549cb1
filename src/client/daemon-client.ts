import type { Socket } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { fromWireError, SessionDBError, toSessionDBError } from "../errors.js";
import type { ResolvedOptions } from "../options.js";
import { isWriteOp, type CallOpName, type OpName, type ParamsOf, type ResultOf, type StreamOpName } from "../operation-catalogue.js";
import { decodeBody } from "../protocol/frame-codec.js";
import { FrameDecoder } from "../protocol/frame-decoder.js";
import { FrameWriter } from "../protocol/frame-writer.js";
import type {
  BackupResult,
  CheckResult,
  ControlArgs,
  ControlOp,
  ControlResult,
  DaemonControl,
  DaemonStats,
  FaultOp,
  HealthResult,
  HelloResult,
  OptimizeResult,
} from "../protocol/control.js";
import { PROTOCOL_VERSION } from "../protocol/messages.js";
import type { WatchFilter } from "../operations/watch-filter.js";
import { Store, type SubscribeOptions } from "../store.js";
import type { WatchEvent } from "../watch-types.js";
import type { Engine } from "../session-db.js";
import { chunkStream } from "./chunk-stream.js";
import { decodeSmallReply } from "./small-reply-decoder.js";
import { connectSocket, servesThis, unavailable } from "./connect-socket.js";
import { notSent, PendingRequests, type PendingRequest } from "./pending-requests.js";
import { requestFrame, trimUndefined } from "./request-frame.js";
import { HEADER_BYTES, MAX_REPLY_FRAME_BYTES } from "../protocol/frame-limits.js";
import { argsForWire } from "./wire-args.js";

/** Extra time a sent request waits beyond the deadline it gave the daemon, so the daemon's own
 *  TIMEOUT (which guarantees the write was not applied) normally arrives first. */
const LOCAL_GRACE_MS = 2000;
/** The pauses between attempts to connect again after a lost connection: growing to this, jittered. */
const RECONNECT_MIN_MS = 20;
const RECONNECT_MAX_MS = 500;

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
  readonly #pending = new PendingRequests();
  /** The connections of this handle's watches, one each. */
  readonly #feeds = new Set<DaemonClient>();
  #lost: SessionDBError | null = null;
  #closed: Promise<void> | null = null;
  /** What the daemon said of itself on connecting. */
  server!: HelloResult;
  /** Resolves when the current connection has closed, whichever side closed it. */
  hungUp!: Promise<void>;
  /**
   * Mode "daemon" with keys: a lost connection is not the end; the writes in flight (each with
   * its key) wait for a new connection, until their deadlines, and are sent again. Auto mode
   * fails over to direct mode instead, and sends them there.
   */
  readonly #reconnects: boolean;

  private constructor(options: ResolvedOptions, socketPath: string) {
    super(options.files);
    this.#options = options;
    this.#socketPath = socketPath;
    this.#reconnects = options.mode === "daemon" && options.idempotencyKeys;
  }

  protected override get autoKeys(): boolean {
    return this.#options.idempotencyKeys;
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
    socket = await connectSocket(socketPath, options.connectTimeoutMs, (bytes) => {
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
      if (socket !== this.#socket) return;
      const lost = new SessionDBError("UNAVAILABLE", "the connection to the daemon was lost; a request in flight may or may not have been applied");
      // Lost while a reconnect says hello on it (the daemon killed again): only the hello was sent
      // on it, and it fails now, so the reconnect tries again. Left to its deadline it would wait
      // on a sweep that holds no process alive: with nothing else to do the process would exit
      // with the writes still waiting.
      if (this.#reconnecting !== null) this.#pending.failSent(lost);
      else if (!this.#dormant) this.#connectionLost(lost);
    });
    this.#socket = socket;
    this.#writer = new FrameWriter(socket);
    this.#decoder = new FrameDecoder(MAX_REPLY_FRAME_BYTES);
    try {
      // The daemon answers hello itself, at once: no grace beyond the connect timeout.
      const hello = (await this.#request("hello", [{ protocol: PROTOCOL_VERSION }], options.connectTimeoutMs, undefined, 0, true)) as HelloResult;
      const said = hello as Partial<Record<keyof HelloResult, unknown>> | null;
      if (said?.server !== "sessiondb" || said.protocol !== PROTOCOL_VERSION) {
        throw unavailable(socketPath, `what answers there is not a sessiondb daemon speaking protocol ${PROTOCOL_VERSION} (hello: ${JSON.stringify(hello)?.slice(0, 200)})`);
      }
      if (!servesThis(hello.database, options)) {
        throw unavailable(socketPath, `that daemon serves ${hello.database}, not ${options.files.db}`);
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
    this.#pending.requeueAll();
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

  protected call<K extends CallOpName>(name: K, args: ParamsOf<K>, key: string | null): Promise<ResultOf<K>> {
    let wire: unknown[];
    try {
      wire = argsForWire(name, trimUndefined(args));
    } catch (err) {
      return Promise.reject(toSessionDBError(err));
    }
    // The daemon answers each operation with what the catalogue says it returns.
    return this.#request(name, wire, this.#options.requestTimeoutMs, undefined, LOCAL_GRACE_MS, false, key) as Promise<ResultOf<K>>;
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

  /** Whether it serves, and the figures of `/metrics`. */
  health(): Promise<HealthResult> {
    return this.#control("health");
  }

  /** Copies the file into `dest`, an empty file the caller made, online. */
  backup(dest: string): Promise<BackupResult> {
    return this.#control("backup", dest);
  }

  /** The integrity checks, on a reader's snapshot. */
  check(opts?: { quick?: boolean }): Promise<CheckResult> {
    return this.#control("check", opts);
  }

  /** Merges the search indexes in short steps, then VACUUMs when asked to. */
  optimize(opts?: { vacuum?: boolean; force?: boolean }): Promise<OptimizeResult> {
    return this.#control("optimize", opts);
  }

  /** The reliability tests' fault injection (refused unless the daemon runs with it on). */
  async fault<K extends FaultOp>(op: K, ...args: ControlArgs<K>): Promise<void> {
    await this.#control(op, ...args);
  }

  #control<K extends ControlOp>(op: K, ...args: ControlArgs<K>): Promise<ControlResult<K>> {
    // The daemon answers each control op with its documented result.
    return this.#request(op, trimUndefined(args), this.#options.requestTimeoutMs) as Promise<ControlResult<K>>;
  }

  protected stream<K extends StreamOpName>(name: K, args: ParamsOf<K>): AsyncIterable<ResultOf<K>> {
    return chunkStream<ResultOf<K>>(
      (onChunk) => this.#request(name, argsForWire(name, trimUndefined(args)), this.#options.requestTimeoutMs, onChunk),
      { pause: () => this.#socket.pause(), resume: () => this.#socket.resume() },
    );
  }

  /**
   * Each watch on a connection of its own: its events are read only as fast as they are
   * consumed (the daemon, not this process, holds what waits, up to its bound, then says
   * `resync`), and its end (break, signal, close) is the connection's. Mode "daemon" with keys
   * (the one that reconnects) resumes a watch whose daemon went away, from its cursor, on a new
   * connection made within `requestTimeoutMs`: a `resync` first, since what sessions did in
   * between is not known.
   */
  protected async *subscribe(filter: WatchFilter, opts: SubscribeOptions): AsyncIterable<WatchEvent> {
    let cursor = filter.afterMessageId;
    let resyncFirst = opts.resyncFirst;
    let lostAt: number | null = null;
    for (let attempt = 0; ; attempt++) {
      if (this.#closed !== null) throw new SessionDBError("CLOSED", "this SessionDB handle is closed");
      if (isAborted(opts.signal)) return;
      let feed: DaemonClient;
      try {
        feed = await DaemonClient.connect(this.#options, this.#socketPath);
      } catch (err) {
        if (lostAt === null || Date.now() - lostAt > this.#options.requestTimeoutMs) throw err;
        const ceiling = Math.min(RECONNECT_MAX_MS, RECONNECT_MIN_MS * 2 ** attempt);
        await sleep(RECONNECT_MIN_MS + Math.random() * (ceiling - RECONNECT_MIN_MS), undefined, { signal: opts.signal }).catch(() => undefined);
        continue;
      }
      this.#feeds.add(feed);
      try {
        for await (const event of feed.#watchOn({ ...filter, afterMessageId: cursor }, resyncFirst, opts.signal)) {
          if (event.type === "message") cursor = Math.max(cursor ?? 0, event.message.id);
          else if (event.type === "resync") cursor = event.afterMessageId;
          yield event;
        }
        return;
      } catch (err) {
        // Closing the handle (or the signal) ended the watch's connection: the iteration just ends.
        if (this.#closed !== null || isAborted(opts.signal)) return;
        if (!this.#reconnects || toSessionDBError(err).code !== "UNAVAILABLE") throw err;
        resyncFirst = true;
        lostAt = Date.now();
        attempt = 0;
      } finally {
        this.#feeds.delete(feed);
        feed.#destroy();
      }
    }
  }

  /** One watch request on this (a watch's own) connection, until its stream ends, fails, or `signal` aborts. */
  #watchOn(filter: WatchFilter, resyncFirst: boolean, signal: AbortSignal | undefined): AsyncIterable<WatchEvent> {
    const args = trimUndefined([{ ...wireFilter(filter), ...(resyncFirst ? { resyncFirst } : {}) }]);
    // No deadline: a subscription lives until it is ended, however long no event comes.
    return chunkStream<WatchEvent>(
      (onChunk) => this.#request("watch", args, Infinity, onChunk, 0),
      { pause: () => this.#socket.pause(), resume: () => this.#socket.resume() },
      signal,
    );
  }

  /** Ends a watch's connection at once (whatever it has in flight fails). */
  #destroy(): void {
    this.#closed ??= Promise.resolve();
    this.#socket.destroy();
  }

  /** Waits for requests in flight, then closes the connection (and every watch's). Idempotent. */
  close(): Promise<void> {
    for (const feed of this.#feeds) feed.#destroy();
    this.#closed ??= this.#pending.whenIdle().then(() => {
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
    key: string | null = null,
  ): Promise<unknown> {
    if (this.#closed !== null) return Promise.reject(new SessionDBError("CLOSED", "this SessionDB handle is closed"));
    if (this.#lost !== null) return Promise.reject(this.#lost);
    return new Promise((resolve, reject) => {
      const write = isWriteOp(op);
      const [id, pending] = this.#pending.add({ op, args, key, write, resolve, reject, timeoutMs, graceMs, onChunk });
      if (this.#dormant && !first) this.#wakeUp();
      if (first || (this.#reconnecting === null && !this.#pending.backedUp && !this.#socket.writableNeedDrain)) this.#send(id, pending);
      else this.#pending.queue(id);
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
      frame = requestFrame(id, pending.op, pending.args, remainingMs, pending.deadline, pending.key);
    } catch (err) {
      this.#pending.fail(id, err as SessionDBError);
      return;
    }
    pending.sent = true;
    pending.everSent = true;
    this.#writer.write(frame);
  }

  /** Sends what waited while the socket was backed up, until it is backed up again. */
  #sendUnsent(): void {
    while (this.#reconnecting === null && !this.#socket.writableNeedDrain) {
      const next = this.#pending.nextUnsent();
      if (next === undefined) return;
      this.#send(...next);
    }
  }

  #onData(chunk: Buffer): void {
    if (this.#decoder.buffered === 0 && chunk.length > HEADER_BYTES && chunk.readUInt32BE(0) === chunk.length - HEADER_BYTES) {
      // One whole frame in this read, none begun before it (a call made one at a time gets its
      // answer so): its body is there, no reassembly needed.
      this.#onBody(chunk.subarray(HEADER_BYTES));
    } else {
      let bodies: Buffer[];
      try {
        bodies = this.#decoder.push(chunk);
      } catch (err) {
        this.#connectionLost(err as SessionDBError);
        this.#socket.destroy();
        return;
      }
      for (const body of bodies) this.#onBody(body);
    }
    // Writes answered OUTCOME_UNKNOWN (the daemon's writer died committing them) go again, with their keys.
    if (this.#pending.backedUp) this.#sendUnsent();
  }

  /** The daemon's own replies (its socket's owner checked on connecting): decoded, not re-validated. */
  #onBody(body: Buffer): void {
    this.#onReply((decodeSmallReply(body) ?? decodeBody(body, true)) as Record<string, unknown>);
  }

  #onReply(reply: Record<string, unknown>): void {
    if (this.#pending.answer(reply)) return;
    // id 0: the daemon closes the connection: idle (CLOSED), or a frame it could not read.
    if (reply.id === 0 && reply.ok === false) {
      const err = fromWireError(reply.error);
      if (err.code === "CLOSED") this.#onGoodbye();
      else this.#connectionLost(err);
    }
  }

  #connectionLost(err: SessionDBError): void {
    if (this.#reconnects && this.#closed === null) {
      // The daemon died, restarts, or hung up: each write in flight goes again with its key.
      if (this.#pending.keepResendable(err) > 0) this.#reconnect();
      else this.#dormant = true;
      return;
    }
    this.#lost ??= err;
    this.#pending.failAll(err);
  }

  /**
   * Connects again, with growing jittered pauses, while some request waits for it (each gives up
   * at its own deadline, see PendingRequests); then sends them in order. When none waits any
   * more, the next request tries again.
   */
  #reconnect(): void {
    if (this.#reconnecting !== null) return;
    this.#reconnecting = (async () => {
      for (let attempt = 0; this.#pending.size > 0; attempt++) {
        try {
          await this.#open();
          return true;
        } catch {
          const ceiling = Math.min(RECONNECT_MAX_MS, RECONNECT_MIN_MS * 2 ** attempt);
          await sleep(RECONNECT_MIN_MS + Math.random() * (ceiling - RECONNECT_MIN_MS));
        }
      }
      return false;
    })().then((connected) => {
      this.#reconnecting = null;
      // Closed meanwhile, with nothing left to send: the new connection is not kept.
      if (connected && this.#closed !== null && this.#pending.size === 0) this.#socket.destroy();
      else if (connected) this.#sendUnsent();
      else this.#dormant = true;
    });
  }
}

/** A filter as the watch request carries it: only what is set. */
function wireFilter(filter: WatchFilter): Record<string, string | number> {
  const wire: Record<string, string | number> = {};
  if (filter.sessionId !== null) wire.sessionId = filter.sessionId;
  if (filter.source !== null) wire.source = filter.source;
  if (filter.afterMessageId !== null) wire.afterMessageId = filter.afterMessageId;
  return wire;
}

function isAborted(signal: AbortSignal | undefined): boolean {
  return signal?.aborted === true;
}

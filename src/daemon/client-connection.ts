import type { Socket } from "node:net";
import { SessionDBError, toSessionDBError, toWireError } from "../errors.js";
import { decodeBody, EncodedResult, encodeFrame, resultFrame } from "../protocol/frame-codec.js";
import { FrameDecoder } from "../protocol/frame-decoder.js";
import type { BodyPool } from "../protocol/body-pool.js";
import { FrameWriter } from "../protocol/frame-writer.js";
import { markReals } from "../protocol/wire-reals.js";
import { parseRequest, requestIdOf, type Chunk, type Request, type Response } from "../protocol/messages.js";
import { ConnectionFlow, type FlowLimits } from "./connection-flow.js";
import type { RequestBudget } from "./request-budget.js";

export interface ConnectionLimits extends FlowLimits {
  maxFrameBytes: number;
  /** A frame left incomplete this long (while the daemon reads the connection) closes it, in ms. */
  frameTimeoutMs: number;
  /** A connection with nothing in flight and nothing received this long is closed, in ms. */
  idleTimeoutMs: number;
}

/** How long a half-closed connection waits for the client to close its side. */
const CLOSE_GRACE_MS = 1000;

/**
 * Runs a request; its result or its error is the reply. `receivedAt`: when the daemon read the
 * request's frame (ms since the epoch), where its deadline starts. `answered` hears of each reply
 * (its outcome: "OK" or the error's code) as it goes out.
 */
export interface RequestHandler {
  handle(request: Request, connection: ClientConnection, receivedAt: number): Promise<unknown>;
  answered(op: Request["op"], outcome: string, receivedAt: number): void;
}

/**
 * Where a connection is in its life. `open`: requests are read and run (the client may have ended
 * its side: what it sent is answered, then the connection ends). `ending`: the daemon ends it
 * (idle, shutting down, or every request of a client that ended answered); nothing more is run,
 * and it half-closes once the replies in flight are out. `failed`: a malformed frame; an error
 * frame went out and it half-closed.
 */
type ConnectionState = "open" | "ending" | "failed";

/**
 * One client on the socket: reassembles frames, checks them, runs requests concurrently (replies
 * go out as they finish, in any order), within the limits its flow control (connection-flow.ts)
 * applies. A malformed frame gets an error frame and closes this connection only.
 */
export class ClientConnection {
  readonly #socket: Socket;
  readonly #limits: ConnectionLimits;
  readonly #handler: RequestHandler;
  readonly #log: (line: string) => void;
  readonly #decoder: FrameDecoder;
  readonly #writer: FrameWriter;
  readonly #flow: ConnectionFlow;
  #state: ConnectionState = "open";
  /** Since when a frame has been incomplete, while the daemon reads this connection (null: none is). */
  #partialSince: number | null = null;
  #lastActive = Date.now();
  readonly #gone = new AbortController();

  constructor(
    socket: Socket,
    limits: ConnectionLimits,
    memory: { budget: RequestBudget; bodies: BodyPool },
    handler: RequestHandler,
    log: (line: string) => void,
  ) {
    this.#socket = socket;
    this.#limits = limits;
    this.#handler = handler;
    this.#log = log;
    this.#decoder = new FrameDecoder(limits.maxFrameBytes, memory.bodies);
    this.#writer = new FrameWriter(socket);
    // Reading resumed: an incomplete frame's clock starts again (see sweep).
    const restartFrameClock = (): void => {
      if (this.#partialSince !== null) this.#partialSince = Date.now();
    };
    this.#flow = new ConnectionFlow(socket, limits, this.#decoder, memory.budget, () => this.#runHeld(), restartFrameClock);
    socket.on("data", (chunk: Buffer) => this.#onData(chunk));
    socket.on("drain", () => {
      this.#flow.drained();
      this.#runHeld();
    });
    socket.on("end", () => {
      // The client shut down its side: what it sent is all there is. Answer it, then close. A
      // client that closed its socket altogether looks the same until something is written to
      // it: an empty write fails at once (EPIPE) if it is gone, and its reads are dropped. From
      // here the socket's readableEnded is true (`ended`).
      if (this.#socket.writable) this.#socket.write(Buffer.alloc(0));
      this.#runHeld();
    });
    socket.on("close", () => {
      this.#gone.abort();
      this.#flow.closed();
      this.#decoder.reset();
      this.#flow.report();
    });
    socket.on("error", () => {
      // A client that vanished mid-reply: its requests still complete; only the replies are lost.
    });
  }

  get open(): boolean {
    return !this.#socket.destroyed && this.#socket.writable;
  }

  /** Aborted once the client has gone: its reads not yet done are dropped (no one would get the answer). */
  get gone(): AbortSignal {
    return this.#gone.signal;
  }

  /** The client shut down its side (half-closed, or gone without the daemon knowing yet). */
  get ended(): boolean {
    return this.#socket.readableEnded;
  }

  /** Sends one frame of a streamed reply, waiting while the client is slow to read. */
  async sendChunk(id: number, chunk: unknown[]): Promise<void> {
    if (!this.open) throw new SessionDBError("CLOSED", "the client went away");
    markReals(chunk);
    if (!this.#writer.write(encodeFrame({ id, chunk } satisfies Chunk))) {
      await this.#flow.whenDrained();
    }
  }

  /** Reply bytes written to this connection and not yet handed to the kernel. */
  get unsentBytes(): number {
    return this.#socket.writableLength;
  }

  /**
   * Writes one frame of a watch's events at once, without waiting (the watch hub bounds what
   * waits, with `unsentBytes`). False when the client is gone.
   */
  pushFrame(frame: Buffer): boolean {
    if (!this.open) return false;
    this.#writer.write(frame);
    return true;
  }

  /** Resolves once what was written has gone to the kernel (at once when nothing waits), or the connection closed. */
  whenDrained(): Promise<void> {
    return this.#socket.writableNeedDrain && this.open ? this.#flow.whenDrained() : Promise.resolve();
  }

  /**
   * Enforces the time limits: a frame left incomplete too long fails the connection (PROTOCOL); an
   * idle connection gets a goodbye frame (id 0, `CLOSED`: nothing sent after it is read) and is
   * closed, and the client reconnects when it next needs to.
   */
  sweep(now: number): void {
    if (this.#state !== "open" || this.#socket.destroyed) return;
    if (this.#partialSince !== null) {
      // A pause of the daemon's making is not the client's delay: the clock starts again when reading resumes.
      if (!this.#flow.paused && now - this.#partialSince > this.#limits.frameTimeoutMs) {
        this.#fail(new SessionDBError("PROTOCOL", `a frame stayed incomplete for over ${this.#limits.frameTimeoutMs / 1000} s`));
      }
      return;
    }
    if (this.#flow.idle && now - this.#lastActive > this.#limits.idleTimeoutMs) {
      this.#send({ id: 0, ok: false, error: { code: "CLOSED", message: `the daemon closed this connection after ${this.#limits.idleTimeoutMs / 1000} s idle; requests sent after this were not read` } });
      this.#state = "ending";
      this.#finish();
    }
  }

  /** Stops reading new requests and ends the connection once the replies in flight are out. */
  shutdown(): void {
    this.#stopReading();
    this.#state = "ending";
    if (this.#flow.inFlight === 0) this.#finish();
  }

  /**
   * Half-closes the connection: the client reads every reply written so far, then the end. What
   * it still sends is read and discarded (those requests were never started). The socket closes
   * when the client closes its side, or after a grace period for one that never does. Closing at
   * once instead would make a pipelining client's next write fail, and Node then drops the replies
   * it has not read yet: acknowledged writes reported as lost.
   */
  #finish(): void {
    // What was received and not run never will be: its memory goes back to the budget now.
    this.#decoder.reset();
    this.#flow.drop();
    this.#socket.removeAllListeners("data");
    this.#socket.on("data", () => {});
    this.#socket.resume();
    this.#socket.end();
    setTimeout(() => this.#socket.destroy(), CLOSE_GRACE_MS).unref();
  }

  #stopReading(): void {
    this.#socket.pause();
    this.#socket.removeAllListeners("data");
  }

  #send(message: Response): void {
    if (!this.open) return;
    if (message.ok && message.result instanceof EncodedResult) {
      this.#writer.write(resultFrame(message.id, message.result));
      return;
    }
    if (message.ok) markReals(message.result);
    this.#writer.write(encodeFrame(message));
  }

  #fail(err: SessionDBError): void {
    if (this.#state === "failed") return;
    this.#state = "failed";
    this.#log(`client error: ${err.code}: ${err.message}; closing that connection`);
    this.#send({ id: 0, ok: false, error: toWireError(err) });
    this.#finish();
  }

  #onData(chunk: Buffer): void {
    let bodies: Buffer[];
    try {
      bodies = this.#decoder.push(chunk);
    } catch (err) {
      this.#fail(toSessionDBError(err));
      return;
    }
    const receivedAt = Date.now();
    this.#lastActive = receivedAt;
    this.#flow.hold(bodies, receivedAt);
    if (this.#decoder.buffered === 0) this.#partialSince = null;
    else this.#partialSince ??= receivedAt;
    this.#runHeld();
  }

  /** Runs held frames while the client stays within its limits; the rest wait, and so does the socket. */
  #runHeld(): void {
    while (this.#state === "open") {
      const frame = this.#flow.next();
      if (frame === undefined) break;
      const { body, receivedAt } = frame;
      let value: unknown;
      try {
        value = decodeBody(body);
      } catch (err) {
        this.#fail(toSessionDBError(err));
        return;
      }
      this.#dispatch(value, receivedAt, body.length);
    }
    if (this.#socket.readableEnded && this.#flow.idle && this.#state === "open") {
      this.#state = "ending";
      this.#finish();
      return;
    }
    this.#flow.report();
    if (this.#state === "open" && !this.#socket.destroyed) this.#flow.update();
  }

  #dispatch(value: unknown, receivedAt: number, bytes: number): void {
    let request: Request;
    try {
      request = parseRequest(value);
    } catch (err) {
      this.#send({ id: requestIdOf(value), ok: false, error: toWireError(err) });
      return;
    }
    this.#flow.started(bytes);
    // One reaction per request, not a chain: this runs for every request.
    this.#handler.handle(request, this, receivedAt).then(
      (result) => {
        this.#handler.answered(request.op, "OK", receivedAt);
        this.#send({ id: request.id, ok: true, result: result ?? null });
        this.#finished(bytes);
      },
      (err: unknown) => {
        const error = toWireError(err);
        this.#handler.answered(request.op, error.code, receivedAt);
        this.#send({ id: request.id, ok: false, error });
        this.#finished(bytes);
      },
    );
  }

  /** A request of `bytes` was answered: the connection runs what it holds next, or ends. */
  #finished(bytes: number): void {
    this.#flow.finished(bytes);
    this.#lastActive = Date.now();
    this.#flow.report();
    if (this.#state === "ending" && this.#flow.inFlight === 0) this.#finish();
    else this.#runHeld();
  }
}

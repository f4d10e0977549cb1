import type { Socket } from "node:net";
import { SessionDBError, toSessionDBError, toWireError } from "../errors.js";
import { decodeBody, encodeFrame } from "../protocol/frame-codec.js";
import { FrameDecoder } from "../protocol/frame-decoder.js";
import type { BodyPool } from "../protocol/body-pool.js";
import { FrameWriter } from "../protocol/frame-writer.js";
import { markReals } from "../protocol/wire-reals.js";
import { parseRequest, requestIdOf, type Chunk, type Request, type Response } from "../protocol/messages.js";
import type { RequestBudget } from "./request-budget.js";

export interface ConnectionLimits {
  maxFrameBytes: number;
  /** Requests of one connection being served at once; past it the socket is not read (backpressure). */
  maxInFlight: number;
  /** Reply bytes waiting for a slow client; past it the socket is not read either. */
  maxBufferedBytes: number;
  /** Request bytes of one connection being served; past it the socket is not read either (one request always runs). */
  maxRequestBytes: number;
  /** A frame left incomplete this long (while the daemon reads the connection) closes it, in ms. */
  frameTimeoutMs: number;
  /** A connection with nothing in flight and nothing received this long is closed, in ms. */
  idleTimeoutMs: number;
}

/** How long a half-closed connection waits for the client to close its side. */
const CLOSE_GRACE_MS = 1000;

/** `receivedAt`: when the daemon read the request's frame (ms since the epoch), where its deadline starts. */
export type RequestHandler = (request: Request, connection: ClientConnection, receivedAt: number) => Promise<unknown>;

/** A frame read but not yet run, and when it was read. */
interface HeldFrame {
  body: Buffer;
  receivedAt: number;
}

/**
 * One client on the socket: reassembles frames, checks them, runs requests concurrently (replies
 * go out as they finish, in any order) and applies backpressure. A malformed frame gets an error
 * frame and closes this connection only.
 */
export class ClientConnection {
  readonly #socket: Socket;
  readonly #limits: ConnectionLimits;
  readonly #handler: RequestHandler;
  readonly #log: (line: string) => void;
  readonly #decoder: FrameDecoder;
  readonly #writer: FrameWriter;
  #inFlight = 0;
  /** Frames read but not yet run: one socket read can hold thousands of small requests. */
  #held: HeldFrame[] = [];
  #readingPaused = false;
  #failed = false;
  #ending = false;
  /** The client ended its side: once every request read is answered, the connection closes. */
  #peerEnded = false;
  #drainWaiters: Array<() => void> = [];
  readonly #budget: RequestBudget;
  /** Bytes of held frames, and of requests being served. */
  #heldBytes = 0;
  #inFlightBytes = 0;
  /** What this connection last reported to the daemon-wide budget. */
  #reported = 0;
  /** The frame being received is counted in the daemon-wide budget at its announced length. */
  #reserved = false;
  readonly #wake = (): void => this.#runHeld();
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
    this.#budget = memory.budget;
    this.#handler = handler;
    this.#log = log;
    this.#decoder = new FrameDecoder(limits.maxFrameBytes, memory.bodies);
    this.#writer = new FrameWriter(socket);
    socket.on("data", (chunk: Buffer) => this.#onData(chunk));
    socket.on("drain", () => {
      for (const w of this.#drainWaiters.splice(0)) w();
      this.#runHeld();
    });
    socket.on("end", () => {
      // The client shut down its side: what it sent is all there is. Answer it, then close. A
      // client that closed its socket altogether looks the same until something is written to
      // it: an empty write fails at once (EPIPE) if it is gone, and its reads are dropped.
      this.#peerEnded = true;
      if (this.#socket.writable) this.#socket.write(Buffer.alloc(0));
      this.#runHeld();
    });
    socket.on("close", () => {
      this.#gone.abort();
      for (const w of this.#drainWaiters.splice(0)) w();
      this.#budget.forget(this.#wake);
      this.#decoder.reset();
      this.#report();
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
    return this.#peerEnded;
  }

  /** Sends one frame of a streamed reply, waiting while the client is slow to read. */
  async sendChunk(id: number, chunk: unknown[]): Promise<void> {
    if (!this.open) throw new SessionDBError("CLOSED", "the client went away");
    markReals(chunk);
    if (!this.#writer.write(encodeFrame({ id, chunk } satisfies Chunk))) {
      await new Promise<void>((resolve) => this.#drainWaiters.push(resolve));
    }
  }

  /**
   * Enforces the time limits: a frame left incomplete too long fails the connection (PROTOCOL); an
   * idle connection gets a goodbye frame (id 0, `CLOSED`: nothing sent after it is read) and is
   * closed, and the client reconnects when it next needs to.
   */
  sweep(now: number): void {
    if (this.#failed || this.#ending || this.#socket.destroyed) return;
    if (this.#partialSince !== null) {
      // A pause of the daemon's making is not the client's delay: the clock starts again when reading resumes.
      if (!this.#readingPaused && now - this.#partialSince > this.#limits.frameTimeoutMs) {
        this.#fail(new SessionDBError("PROTOCOL", `a frame stayed incomplete for over ${this.#limits.frameTimeoutMs / 1000} s`));
      }
      return;
    }
    if (this.#inFlight === 0 && this.#held.length === 0 && now - this.#lastActive > this.#limits.idleTimeoutMs) {
      this.#send({ id: 0, ok: false, error: { code: "CLOSED", message: `the daemon closed this connection after ${this.#limits.idleTimeoutMs / 1000} s idle; requests sent after this were not read` } });
      this.#ending = true;
      this.#finish();
    }
  }

  /** Stops reading new requests and ends the connection once the replies in flight are out. */
  shutdown(): void {
    this.#stopReading();
    this.#ending = true;
    if (this.#inFlight === 0) this.#finish();
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
    this.#held = [];
    this.#heldBytes = 0;
    this.#reserved = false;
    this.#report();
    this.#budget.forget(this.#wake);
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
    if (message.ok) markReals(message.result);
    this.#writer.write(encodeFrame(message));
  }

  #fail(err: SessionDBError): void {
    if (this.#failed) return;
    this.#failed = true;
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
    for (const body of bodies) {
      this.#held.push({ body, receivedAt });
      this.#heldBytes += body.length;
    }
    if (bodies.length > 0) this.#reserved = false;
    if (this.#decoder.buffered === 0) this.#partialSince = null;
    else this.#partialSince ??= receivedAt;
    this.#runHeld();
  }

  /** Runs held frames while the client stays within its limits; the rest wait, and so does the socket. */
  #runHeld(): void {
    while (this.#held.length > 0 && !this.#failed && !this.#ending && !this.#overLimits()) {
      const { body, receivedAt } = this.#held.shift()!;
      this.#heldBytes -= body.length;
      let value: unknown;
      try {
        value = decodeBody(body);
      } catch (err) {
        this.#fail(toSessionDBError(err));
        return;
      }
      this.#dispatch(value, receivedAt, body.length);
    }
    if (this.#peerEnded && this.#held.length === 0 && this.#inFlight === 0 && !this.#ending && !this.#failed) {
      this.#ending = true;
      this.#finish();
      return;
    }
    this.#report();
    this.#updateFlow();
  }

  #overLimits(): boolean {
    return (
      this.#inFlight >= this.#limits.maxInFlight ||
      (this.#inFlight > 0 && this.#inFlightBytes + (this.#held[0]?.body.length ?? 0) > this.#limits.maxRequestBytes) ||
      this.#socket.writableLength > this.#limits.maxBufferedBytes
    );
  }

  /** Tells the daemon-wide budget what this connection holds now (nothing once it is closed). */
  #report(): void {
    const receiving = this.#reserved ? Math.max(this.#decoder.announced, this.#decoder.buffered) : this.#decoder.buffered;
    const holding = this.#socket.destroyed ? 0 : receiving + this.#heldBytes + this.#inFlightBytes;
    this.#budget.add(holding - this.#reported);
    this.#reported = holding;
  }

  #dispatch(value: unknown, receivedAt: number, bytes: number): void {
    let request: Request;
    try {
      request = parseRequest(value);
    } catch (err) {
      this.#send({ id: requestIdOf(value), ok: false, error: toWireError(err) });
      return;
    }
    this.#inFlight++;
    this.#inFlightBytes += bytes;
    this.#handler(request, this, receivedAt).then(
      (result) => this.#send({ id: request.id, ok: true, result: result ?? null }),
      (err: unknown) => this.#send({ id: request.id, ok: false, error: toWireError(err) }),
    ).finally(() => {
      this.#inFlight--;
      this.#inFlightBytes -= bytes;
      this.#lastActive = Date.now();
      this.#report();
      if (this.#ending && this.#inFlight === 0) this.#finish();
      else this.#runHeld();
    });
  }

  /**
   * Reads while the client stays within its limits and nothing is held, and, for a large frame
   * whose header has come, while the daemon-wide budget has room for all of it (it is then counted
   * at its full length until it is answered). A connection waiting for room is not read, and the
   * time limit on its incomplete frame waits too; frames of those receiving theirs but stalling
   * run out of time and give their room back.
   */
  #updateFlow(): void {
    if (this.#failed || this.#ending || this.#socket.destroyed) return;
    const announced = this.#decoder.announced;
    if (announced > 0 && !this.#reserved && this.#budget.admits(this.#reported, announced - this.#decoder.buffered, this.#wake)) {
      this.#reserved = true;
      this.#decoder.allocate();
      this.#report();
    }
    const throttle = this.#held.length > 0 || this.#overLimits() || (announced > 0 && !this.#reserved);
    if (throttle && !this.#readingPaused) {
      this.#readingPaused = true;
      this.#socket.pause();
    } else if (!throttle && this.#readingPaused) {
      this.#readingPaused = false;
      if (this.#partialSince !== null) this.#partialSince = Date.now();
      this.#socket.resume();
    }
  }
}

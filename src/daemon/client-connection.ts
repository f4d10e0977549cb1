import type { Socket } from "node:net";
import { SessionDBError, toSessionDBError, toWireError } from "../errors.js";
import { decodeBody, encodeFrame, FrameDecoder } from "../protocol/frame-codec.js";
import { FrameWriter } from "../protocol/frame-writer.js";
import { parseRequest, requestIdOf, type Chunk, type Request, type Response } from "../protocol/messages.js";

export interface ConnectionLimits {
  maxFrameBytes: number;
  /** Requests of one connection being served at once; past it the socket is not read (backpressure). */
  maxInFlight: number;
  /** Reply bytes waiting for a slow client; past it the socket is not read either. */
  maxBufferedBytes: number;
}

/** How long a half-closed connection waits for the client to close its side. */
const CLOSE_GRACE_MS = 1000;

export type RequestHandler = (request: Request, connection: ClientConnection) => Promise<unknown>;

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
  #held: Buffer[] = [];
  #readingPaused = false;
  #failed = false;
  #ending = false;
  #drainWaiters: Array<() => void> = [];

  constructor(socket: Socket, limits: ConnectionLimits, handler: RequestHandler, log: (line: string) => void) {
    this.#socket = socket;
    this.#limits = limits;
    this.#handler = handler;
    this.#log = log;
    this.#decoder = new FrameDecoder(limits.maxFrameBytes);
    this.#writer = new FrameWriter(socket);
    socket.on("data", (chunk: Buffer) => this.#onData(chunk));
    socket.on("drain", () => {
      for (const w of this.#drainWaiters.splice(0)) w();
      this.#runHeld();
    });
    socket.on("close", () => {
      for (const w of this.#drainWaiters.splice(0)) w();
    });
    socket.on("error", () => {
      // A client that vanished mid-reply: its requests still complete; only the replies are lost.
    });
  }

  get open(): boolean {
    return !this.#socket.destroyed && this.#socket.writable;
  }

  /** Sends one frame of a streamed reply, waiting while the client is slow to read. */
  async sendChunk(id: number, chunk: unknown[]): Promise<void> {
    if (!this.open) throw new SessionDBError("CLOSED", "the client went away");
    if (!this.#writer.write(encodeFrame({ id, chunk } satisfies Chunk))) {
      await new Promise<void>((resolve) => this.#drainWaiters.push(resolve));
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
    if (this.open) this.#writer.write(encodeFrame(message));
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
    this.#held.push(...bodies);
    this.#runHeld();
  }

  /** Runs held frames while the client stays within its limits; the rest wait, and so does the socket. */
  #runHeld(): void {
    while (this.#held.length > 0 && !this.#failed && !this.#ending && !this.#overLimits()) {
      let value: unknown;
      try {
        value = decodeBody(this.#held.shift()!);
      } catch (err) {
        this.#fail(toSessionDBError(err));
        return;
      }
      this.#dispatch(value);
    }
    this.#updateFlow();
  }

  #overLimits(): boolean {
    return this.#inFlight >= this.#limits.maxInFlight || this.#socket.writableLength > this.#limits.maxBufferedBytes;
  }

  #dispatch(value: unknown): void {
    let request: Request;
    try {
      request = parseRequest(value);
    } catch (err) {
      this.#send({ id: requestIdOf(value), ok: false, error: toWireError(err) });
      return;
    }
    this.#inFlight++;
    this.#handler(request, this).then(
      (result) => this.#send({ id: request.id, ok: true, result: result ?? null }),
      (err: unknown) => this.#send({ id: request.id, ok: false, error: toWireError(err) }),
    ).finally(() => {
      this.#inFlight--;
      if (this.#ending && this.#inFlight === 0) this.#finish();
      else this.#runHeld();
    });
  }

  /** Reads while the client stays within its in-flight and buffered-reply limits and nothing is held. */
  #updateFlow(): void {
    if (this.#failed || this.#ending || this.#socket.destroyed) return;
    const throttle = this.#held.length > 0 || this.#overLimits();
    if (throttle && !this.#readingPaused) {
      this.#readingPaused = true;
      this.#socket.pause();
    } else if (!throttle && this.#readingPaused) {
      this.#readingPaused = false;
      this.#socket.resume();
    }
  }
}

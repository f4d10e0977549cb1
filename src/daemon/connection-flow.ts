import type { Socket } from "node:net";
import type { FrameDecoder } from "../protocol/frame-decoder.js";
import type { RequestBudget } from "./request-budget.js";

/** The limits past which a connection's socket is not read (backpressure). */
export interface FlowLimits {
  /** Requests of one connection being served at once; past it the socket is not read (backpressure). */
  maxInFlight: number;
  /** Reply bytes waiting for a slow client; past it the socket is not read either. */
  maxBufferedBytes: number;
  /** Request bytes of one connection being served; past it the socket is not read either (one request always runs). */
  maxRequestBytes: number;
}

/** A frame read but not yet run, and when it was read. */
export interface HeldFrame {
  body: Buffer;
  receivedAt: number;
}

/**
 * One connection's flow control: what it holds (frames read and not run, requests being served,
 * the frame being received), what of that it reports to the daemon-wide budget, and whether its
 * socket is read. The connection's lifecycle decides when; this decides how much.
 */
export class ConnectionFlow {
  readonly #socket: Socket;
  readonly #limits: FlowLimits;
  readonly #decoder: FrameDecoder;
  readonly #budget: RequestBudget;
  /** Called when the budget has room again (the connection runs what it holds and reads on). */
  readonly #wake: () => void;
  /** Called as reading resumes after a pause of the daemon's making. */
  readonly #onResume: () => void;
  /** Frames read but not yet run: one socket read can hold thousands of small requests. */
  #held: HeldFrame[] = [];
  #paused = false;
  #inFlight = 0;
  /** Bytes of held frames, and of requests being served. */
  #heldBytes = 0;
  #inFlightBytes = 0;
  /** What this connection last reported to the daemon-wide budget. */
  #reported = 0;
  /** The frame being received is counted in the daemon-wide budget at its announced length. */
  #reserved = false;
  #drainWaiters: Array<() => void> = [];

  constructor(
    socket: Socket,
    limits: FlowLimits,
    decoder: FrameDecoder,
    budget: RequestBudget,
    wake: () => void,
    onResume: () => void,
  ) {
    this.#socket = socket;
    this.#limits = limits;
    this.#decoder = decoder;
    this.#budget = budget;
    this.#wake = wake;
    this.#onResume = onResume;
  }

  /** The socket is not read (the connection is over a limit, holds frames, or waits for the budget). */
  get paused(): boolean {
    return this.#paused;
  }

  get inFlight(): number {
    return this.#inFlight;
  }

  /** Nothing is held and nothing is being served. */
  get idle(): boolean {
    return this.#inFlight === 0 && this.#held.length === 0;
  }

  /** Holds the frames a read completed; a frame completed ends the reservation of the one that was being received. */
  hold(bodies: Buffer[], receivedAt: number): void {
    for (const body of bodies) {
      this.#held.push({ body, receivedAt });
      this.#heldBytes += body.length;
    }
    if (bodies.length > 0) this.#reserved = false;
  }

  /** The next held frame, if the connection stays within its limits to run it. */
  next(): HeldFrame | undefined {
    if (this.#held.length === 0 || this.#overLimits()) return undefined;
    const frame = this.#held.shift()!;
    this.#heldBytes -= frame.body.length;
    return frame;
  }

  /** A request of `bytes` starts being served. */
  started(bytes: number): void {
    this.#inFlight++;
    this.#inFlightBytes += bytes;
  }

  /** A request of `bytes` was answered. */
  finished(bytes: number): void {
    this.#inFlight--;
    this.#inFlightBytes -= bytes;
  }

  /** Drops what is held and not run (it never will be), and leaves the budget's waiting list. */
  drop(): void {
    this.#held = [];
    this.#heldBytes = 0;
    this.#reserved = false;
    this.report();
    this.#budget.forget(this.#wake);
  }

  /** Resolves once the socket has written what it buffered (or has closed). */
  whenDrained(): Promise<void> {
    return new Promise<void>((resolve) => this.#drainWaiters.push(resolve));
  }

  /** The socket drained (or closed): those waiting to write go on. */
  drained(): void {
    for (const w of this.#drainWaiters.splice(0)) w();
  }

  /** The socket closed: no one waits to write to it, and it waits for no room in the budget. */
  closed(): void {
    this.drained();
    this.#budget.forget(this.#wake);
  }

  /** Tells the daemon-wide budget what this connection holds now (nothing once it is closed). */
  report(): void {
    const receiving = this.#reserved ? Math.max(this.#decoder.announced, this.#decoder.buffered) : this.#decoder.buffered;
    const holding = this.#socket.destroyed ? 0 : receiving + this.#heldBytes + this.#inFlightBytes;
    this.#budget.add(holding - this.#reported);
    this.#reported = holding;
  }

  /**
   * Reads while the client stays within its limits and nothing is held, and, for a large frame
   * whose header has come, while the daemon-wide budget has room for all of it (it is then counted
   * at its full length until it is answered). A connection waiting for room is not read, and the
   * time limit on its incomplete frame waits too; frames of those receiving theirs but stalling
   * run out of time and give their room back.
   */
  update(): void {
    const announced = this.#decoder.announced;
    if (announced > 0 && !this.#reserved && this.#budget.admits(this.#reported, announced - this.#decoder.buffered, this.#wake)) {
      this.#reserved = true;
      this.#decoder.allocate();
      this.report();
    }
    const throttle = this.#held.length > 0 || this.#overLimits() || (announced > 0 && !this.#reserved);
    if (throttle && !this.#paused) {
      this.#paused = true;
      this.#socket.pause();
    } else if (!throttle && this.#paused) {
      this.#paused = false;
      this.#onResume();
      this.#socket.resume();
    }
  }

  #overLimits(): boolean {
    return (
      this.#inFlight >= this.#limits.maxInFlight ||
      (this.#inFlight > 0 && this.#inFlightBytes + (this.#held[0]?.body.length ?? 0) > this.#limits.maxRequestBytes) ||
      this.#socket.writableLength > this.#limits.maxBufferedBytes
    );
  }
}

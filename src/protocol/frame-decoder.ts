import { SessionDBError } from "../errors.js";
import { BodyPool } from "./body-pool.js";
import { DEFAULT_MAX_FRAME_BYTES, HEADER_BYTES } from "./frame-limits.js";

/**
 * Reassembles frames from a byte stream. `push` returns the frame bodies completed by a chunk;
 * a declared length of 0 or above the limit fails with PROTOCOL or FRAME_TOO_LARGE before any
 * byte of the body is buffered.
 *
 * A chunk may be borrowed: a read buffer the socket fills again after this call (`onread`). The
 * bodies returned may then be views of it, to be used before returning to the event loop; the
 * bytes of a frame not yet complete are copied.
 */
export class FrameDecoder {
  readonly #maxFrameBytes: number;
  /** The length prefix being read, and how many of its bytes have come. */
  readonly #header = Buffer.alloc(HEADER_BYTES);
  #headerFill = 0;
  /** The announced length of the body being received (0: its header has not come). */
  #length = 0;
  /** The body being received, allocated once at its announced length… */
  #body: Buffer | null = null;
  #bodyFill = 0;
  /** …or, with a pool, its first bytes until the owner lets it `allocate()`. */
  #prefix: Buffer[] = [];
  #prefixFill = 0;
  readonly #pool: BodyPool | null;

  /**
   * `pool`: large bodies are taken from it only when the owner calls `allocate()` (a connection
   * waiting for room in the daemon's budget holds just the bytes it has read), and the one being
   * received goes back to it on `reset()`.
   */
  constructor(maxFrameBytes = DEFAULT_MAX_FRAME_BYTES, pool: BodyPool | null = null) {
    this.#maxFrameBytes = maxFrameBytes;
    this.#pool = pool;
  }

  /** Bytes received of a frame not yet complete. */
  get buffered(): number {
    return this.#headerFill + this.#bodyFill + this.#prefixFill;
  }

  /** The length the frame being received announced, or 0 when no frame has its header read. */
  get announced(): number {
    return this.#length;
  }

  push(chunk: Buffer): Buffer[] {
    const bodies: Buffer[] = [];
    let at = 0;
    while (at < chunk.length) {
      if (this.#length === 0) {
        const n = Math.min(HEADER_BYTES - this.#headerFill, chunk.length - at);
        chunk.copy(this.#header, this.#headerFill, at, at + n);
        this.#headerFill += n;
        at += n;
        if (this.#headerFill < HEADER_BYTES) break;
        this.#headerFill = 0;
        const length = this.#header.readUInt32BE(0);
        if (length === 0) throw new SessionDBError("PROTOCOL", "empty frame");
        if (length > this.#maxFrameBytes) {
          throw new SessionDBError("FRAME_TOO_LARGE", `frame of ${length} bytes exceeds the limit of ${this.#maxFrameBytes}`);
        }
        if (chunk.length - at >= length) {
          // Whole in this chunk: a view of it, no copy (a borrowed chunk's views are used before it is reused).
          bodies.push(chunk.subarray(at, at + length));
          at += length;
          continue;
        }
        this.#length = length;
        // Spread over several reads: one buffer of the announced length, filled as the bytes come,
        // instead of a list of reads joined (copied) at the end.
        if (this.#pool === null || length < BodyPool.MIN_BYTES) this.allocate();
      }
      const n = Math.min(this.#length - this.#bodyFill - this.#prefixFill, chunk.length - at);
      if (this.#body !== null) {
        chunk.copy(this.#body, this.#bodyFill, at, at + n);
        this.#bodyFill += n;
      } else {
        this.#prefix.push(Buffer.from(chunk.subarray(at, at + n)));
        this.#prefixFill += n;
      }
      at += n;
      if (this.#bodyFill + this.#prefixFill === this.#length) {
        bodies.push(this.#body ?? Buffer.concat(this.#prefix));
        this.#clear();
      }
    }
    return bodies;
  }

  /** Allocates the body being received at its full length (a no-op when it is). */
  allocate(): void {
    if (this.#length === 0 || this.#body !== null) return;
    this.#body = this.#pool?.take(this.#length) ?? Buffer.allocUnsafe(this.#length);
    for (const part of this.#prefix) {
      part.copy(this.#body, this.#bodyFill);
      this.#bodyFill += part.length;
    }
    this.#prefix = [];
    this.#prefixFill = 0;
  }

  /** Drops a frame being received (its connection is closing). */
  reset(): void {
    if (this.#body !== null) this.#pool?.give(this.#body);
    this.#clear();
    this.#headerFill = 0;
  }

  #clear(): void {
    this.#length = 0;
    this.#body = null;
    this.#bodyFill = 0;
    this.#prefix = [];
    this.#prefixFill = 0;
  }
}

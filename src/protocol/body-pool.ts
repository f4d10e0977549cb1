/**
 * Buffers for large frame bodies, reused. A frame dropped half-received (its connection timed out
 * or went away) gives its buffer back, and the next large frame is received into it: a stream of
 * clients that announce large frames and never finish them cycles through the same memory instead
 * of leaving garbage for the collector at every turn.
 */
export class BodyPool {
  /** Bodies smaller than this are allocated as usual. */
  static readonly MIN_BYTES = 1024 * 1024;
  readonly #maxFreeBytes: number;
  readonly #free: ArrayBuffer[] = [];
  #freeBytes = 0;

  constructor(maxFreeBytes: number) {
    this.#maxFreeBytes = maxFreeBytes;
  }

  take(size: number): Buffer {
    if (size >= BodyPool.MIN_BYTES) {
      const i = this.#free.findIndex((b) => b.byteLength >= size);
      if (i >= 0) {
        const [free] = this.#free.splice(i, 1);
        this.#freeBytes -= free!.byteLength;
        return Buffer.from(free!, 0, size);
      }
      return Buffer.from(new ArrayBuffer(size));
    }
    return Buffer.allocUnsafe(size);
  }

  /** A body taken from this pool that nothing else refers to. */
  give(body: Buffer): void {
    const whole = body.buffer;
    if (body.length < BodyPool.MIN_BYTES || !(whole instanceof ArrayBuffer) || this.#freeBytes + whole.byteLength > this.#maxFreeBytes) return;
    this.#free.push(whole);
    this.#freeBytes += whole.byteLength;
  }
}

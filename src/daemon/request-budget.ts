/**
 * The request bytes the whole daemon holds: frames being received (at their announced length),
 * frames read but not yet run, and requests being served, summed over every connection. A
 * connection starts receiving a large frame only when the total leaves room for it, else it is
 * not read until room is freed; one that holds little (under `FLOOR_BYTES`) is always read, so
 * clients making ordinary calls keep being served while others hog memory.
 */
export class RequestBudget {
  /** A connection holding less than this is never throttled by the daemon-wide total. */
  static readonly FLOOR_BYTES = 1024 * 1024;
  readonly #limit: number;
  #used = 0;
  readonly #waiting = new Set<() => void>();

  constructor(limit: number) {
    this.#limit = limit;
  }

  get used(): number {
    return this.#used;
  }

  /** Records a change of what one connection holds; when the total falls under the limit, waiting connections are woken. */
  add(delta: number): void {
    this.#used += delta;
    if (delta < 0 && this.#used <= this.#limit && this.#waiting.size > 0) {
      const waiting = [...this.#waiting];
      this.#waiting.clear();
      for (const wake of waiting) wake();
    }
  }

  /**
   * Whether a connection holding `holding` bytes may take `more`: when the total stays within the
   * limit, or the connection would still hold little. Else `wake` is called once room is freed.
   */
  admits(holding: number, more: number, wake: () => void): boolean {
    if (this.#used + more <= this.#limit || holding + more < RequestBudget.FLOOR_BYTES) return true;
    this.#waiting.add(wake);
    return false;
  }

  forget(wake: () => void): void {
    this.#waiting.delete(wake);
  }
}

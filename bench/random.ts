/**
 * A small seeded random source (mulberry32): a seed gives the same corpus and the same message
 * pool on every machine, so runs on different machines write the same text.
 */
export class Random {
  #state: number;

  constructor(seed: number) {
    this.#state = seed >>> 0;
  }

  /** A float in [0, 1). */
  next(): number {
    this.#state = (this.#state + 0x6d2b79f5) >>> 0;
    let t = this.#state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** An integer in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)]!;
  }

  hex(length: number): string {
    let s = "";
    while (s.length < length) s += Math.floor(this.next() * 16).toString(16);
    return s;
  }
}

/**
 * Picks words with Zipf-like frequencies (weight 1/rank): a few words are everywhere and most
 * are rare, as in real text, which is what makes "common term" and "rare term" searches differ.
 */
export class ZipfPicker<T> {
  readonly #items: readonly T[];
  readonly #cumulative: Float64Array;

  constructor(items: readonly T[], exponent = 1) {
    this.#items = items;
    this.#cumulative = new Float64Array(items.length);
    let total = 0;
    for (let i = 0; i < items.length; i++) {
      total += 1 / (i + 1) ** exponent;
      this.#cumulative[i] = total;
    }
    for (let i = 0; i < items.length; i++) this.#cumulative[i]! /= total;
  }

  pick(random: Random): T {
    const x = random.next();
    let lo = 0;
    let hi = this.#cumulative.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.#cumulative[mid]! < x) lo = mid + 1;
      else hi = mid;
    }
    return this.#items[lo]!;
  }
}

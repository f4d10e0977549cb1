import type { Histogram } from "../protocol/control.js";

/** Bucket bounds: requests per group commit, and COMMIT time in seconds (Prometheus's unit). */
const BATCH_SIZE_BOUNDS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024];
const COMMIT_SECONDS_BOUNDS = [0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

/** A cumulative histogram, as Prometheus keeps one: counts only grow. */
class Buckets {
  readonly #bounds: number[];
  readonly #counts: number[];
  #sum = 0;
  #count = 0;

  constructor(bounds: number[]) {
    this.#bounds = bounds;
    this.#counts = bounds.map(() => 0);
  }

  add(value: number): void {
    this.#sum += value;
    this.#count++;
    const at = this.#bounds.findIndex((le) => value <= le);
    if (at >= 0) this.#counts[at]!++;
  }

  snapshot(): Histogram {
    let running = 0;
    const buckets = this.#bounds.map((le, i): [number, number] => [le, (running += this.#counts[i]!)]);
    return { buckets, sum: this.#sum, count: this.#count };
  }
}

/** The group commits' sizes and COMMIT times since the daemon started, and when the last one was. */
export class CommitHistograms {
  readonly #batchSize = new Buckets(BATCH_SIZE_BOUNDS);
  readonly #commitSeconds = new Buckets(COMMIT_SECONDS_BOUNDS);
  #lastCommitAt: number | null = null;
  /** Requests in the last group commit: the one a write answered just now was in. */
  lastBatchSize = 0;

  record(batchSize: number, commitMs: number): void {
    this.lastBatchSize = batchSize;
    this.#batchSize.add(batchSize);
    this.#commitSeconds.add(commitMs / 1000);
    this.#lastCommitAt = Date.now();
  }

  snapshot(): { batchSize: Histogram; commitSeconds: Histogram; lastCommitAt: number | null; lastBatchSize: number } {
    return { batchSize: this.#batchSize.snapshot(), commitSeconds: this.#commitSeconds.snapshot(), lastCommitAt: this.#lastCommitAt, lastBatchSize: this.lastBatchSize };
  }
}

/** Percentiles of one run, medians and spread across repetitions, and latency histograms. */

export interface LatencySummary {
  count: number;
  mean: number;
  p50: number;
  p99: number;
  p999: number;
  max: number;
}

/** Nearest-rank percentile of ascending `sorted` (0 when empty). */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return 0;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))]!;
}

export function summarizeLatencies(samples: ArrayLike<number>): LatencySummary {
  const sorted = Float64Array.from(samples).sort();
  let sum = 0;
  for (const v of sorted) sum += v;
  return {
    count: sorted.length,
    mean: sorted.length === 0 ? 0 : sum / sorted.length,
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    p999: percentile(sorted, 99.9),
    max: sorted.length === 0 ? 0 : sorted[sorted.length - 1]!,
  };
}

/** A figure measured once per repetition: its median and its range. */
export interface Spread {
  median: number;
  min: number;
  max: number;
  n: number;
}

/** Median and range of the values, ignoring nulls; null when there is none. */
export function spread(values: ReadonlyArray<number | null>): Spread | null {
  const known = values.filter((v): v is number => v !== null && Number.isFinite(v)).sort((a, b) => a - b);
  if (known.length === 0) return null;
  const mid = known.length >> 1;
  const median = known.length % 2 === 1 ? known[mid]! : (known[mid - 1]! + known[mid]!) / 2;
  return { median, min: known[0]!, max: known[known.length - 1]!, n: known.length };
}

/** `a / b`, null when either is missing or b is 0. */
export function ratio(a: number | null | undefined, b: number | null | undefined): number | null {
  if (a === null || a === undefined || b === null || b === undefined || b === 0) return null;
  return a / b;
}

/** Log-spaced latency bins: 10 per decade from 10 µs to 100 s. */
const BINS_PER_DECADE = 10;
const FIRST_EDGE_MS = 0.01;
const DECADES = 7;
export const HISTOGRAM_EDGES_MS: readonly number[] = Array.from(
  { length: BINS_PER_DECADE * DECADES + 1 },
  (_, i) => FIRST_EDGE_MS * 10 ** (i / BINS_PER_DECADE),
);

/** Counts per bin of HISTOGRAM_EDGES_MS (below the first edge counts in the first bin, above the last in the last). */
export function histogram(samples: ArrayLike<number>): number[] {
  const counts = new Array<number>(HISTOGRAM_EDGES_MS.length - 1).fill(0);
  for (let i = 0; i < samples.length; i++) {
    const v = samples[i]!;
    const bin = Math.floor(Math.log10(Math.max(v, FIRST_EDGE_MS) / FIRST_EDGE_MS) * BINS_PER_DECADE);
    counts[Math.min(counts.length - 1, Math.max(0, bin))]!++;
  }
  return counts;
}

/** Adds histograms bin by bin. */
export function addHistograms(histograms: ReadonlyArray<readonly number[]>): number[] {
  const total = new Array<number>(HISTOGRAM_EDGES_MS.length - 1).fill(0);
  for (const h of histograms) h.forEach((n, i) => (total[i]! += n));
  return total;
}

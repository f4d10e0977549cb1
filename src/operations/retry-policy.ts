/** The jittered retry of SPEC §4: its policy and its pauses, the same for both engines. */

/** The policy, resolved. */
export interface RetryPolicy {
  /** How long a write keeps trying for the lock, in ms, before it fails with BUSY. */
  readonly budgetMs: number;
  /** An optional cap on the attempts within the budget (Infinity: none). */
  readonly maxAttempts: number;
  readonly minDelayMs: number;
  readonly maxDelayMs: number;
}

/**
 * 20 s: the reference's 15 attempts (~1.3 s) proved too short in the field, and its successor
 * waits 20 s for ordinary writes.
 */
export const DEFAULT_RETRY: RetryPolicy = { budgetMs: 20_000, maxAttempts: Infinity, minDelayMs: 20, maxDelayMs: 150 };

/** The jitter keeps its range this long; past it the range grows with the wait, up to 8 times. */
const JITTER_STEADY_MS = 2000;
const MAX_JITTER_GROWTH = 8;

/**
 * A uniformly random pause, so that writers who lost the lock together do not retry together;
 * after a long wait the pauses grow, so a crowd of waiters polls a long-held lock less often.
 */
export function jitterMs(policy: RetryPolicy, waitedMs = 0): number {
  const growth = waitedMs <= JITTER_STEADY_MS ? 1 : Math.min(MAX_JITTER_GROWTH, waitedMs / JITTER_STEADY_MS);
  return (policy.minDelayMs + Math.random() * (policy.maxDelayMs - policy.minDelayMs)) * growth;
}

/** The pause before attempt `attempt + 1`, or null once the budget (or the attempts) are spent. */
export function retryDelayMs(policy: RetryPolicy, attempt: number, startedAt: number): number | null {
  const waited = performance.now() - startedAt;
  if (attempt >= policy.maxAttempts || waited >= policy.budgetMs) return null;
  return Math.min(jitterMs(policy, waited), policy.budgetMs - waited);
}

import { setTimeout as sleep } from "node:timers/promises";

/**
 * How long a condition may take to come true: a bound for one that never does, not a speed
 * target, so it is generous enough for a saturated machine.
 */
const WAIT_LIMIT_MS = 120_000;

/**
 * Polls `condition` until it holds; fails naming `what` if it still does not after the limit.
 * A test that goes on without the state it waited for fails later, far from the cause.
 */
export async function waitUntil(what: string, condition: () => boolean | Promise<boolean>, limitMs = WAIT_LIMIT_MS): Promise<void> {
  const until = Date.now() + limitMs;
  while (!(await condition())) {
    if (Date.now() > until) throw new Error(`still waiting after ${limitMs} ms for ${what}`);
    await sleep(10);
  }
}

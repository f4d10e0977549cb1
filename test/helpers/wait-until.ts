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

/**
 * Polls `read` until its value has not changed for `steadyMs`, and returns that value: the wait
 * for a state that is an absence of progress (a producer that stopped, held back by its
 * consumer). A producer still going, however slowly, keeps it waiting up to the limit.
 */
export async function waitUntilSteady<T>(what: string, read: () => T | Promise<T>, steadyMs = 500, limitMs = WAIT_LIMIT_MS): Promise<T> {
  const until = Date.now() + limitMs;
  let value = await read();
  let since = Date.now();
  for (;;) {
    await sleep(25);
    const now = await read();
    if (now !== value) {
      value = now;
      since = Date.now();
    } else if (Date.now() - since >= steadyMs) {
      return value;
    }
    if (Date.now() > until) throw new Error(`still waiting after ${limitMs} ms for ${what} to settle (last ${String(value)})`);
  }
}

/**
 * `sessiondb serve` expected to refuse: run with a bound, so a daemon that starts after all (the
 * bug) fails the test instead of hanging it.
 */
import type { TestContext } from "node:test";
import { CLI, killAndWait } from "./daemon.js";
import { Child, type Finished } from "./processes.js";

/**
 * How long a refusing `serve` may take to exit (it probes a live daemon for up to 5 s): a bound
 * for one that never refuses, generous enough for a saturated machine (where starting Node alone
 * has taken over 15 s).
 */
const REFUSAL_LIMIT_MS = 120_000;

export interface AsUser {
  uid: number;
  gid: number;
}

/**
 * Runs `sessiondb --db <db> serve ...args` (as `user`, when given); resolves with how it exited,
 * or fails the test if it still runs after the bound (it started serving).
 */
export async function serveExpectingRefusal(t: TestContext, db: string, args: readonly string[] = [], user?: AsUser): Promise<Finished> {
  const child = new Child(process.execPath, [CLI, "--db", db, "serve", "--readers", "1", ...args], { user });
  t.after(() => killAndWait(child));
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), REFUSAL_LIMIT_MS)));
  const finished = await Promise.race([child.done, bound]);
  clearTimeout(timer);
  if (finished === null) throw new Error(`serve --db ${db} ${args.join(" ")} did not refuse: it was still running after ${REFUSAL_LIMIT_MS} ms`);
  return finished;
}

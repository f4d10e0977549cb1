/**
 * When a queued write may no longer start (SPEC §6, deadlines): the one rule both engines' writers
 * apply to a batch. A write past its deadline is answered, never applied; one within it may start.
 */
import { SessionDBError } from "../errors.js";

/** Whether a write whose deadline is `deadline` (ms since the epoch) may still start at `now`. */
export function mayStart(deadline: number, now: number = Date.now()): boolean {
  return deadline > now;
}

/** The writes of a batch that may still start (`live`), and those past their deadline (`expired`), in order. */
export function splitExpired<J extends { readonly deadline: number }>(jobs: readonly J[], now: number = Date.now()): { live: J[]; expired: J[] } {
  const live: J[] = [];
  const expired: J[] = [];
  for (const job of jobs) (mayStart(job.deadline, now) ? live : expired).push(job);
  return { live, expired };
}

/** The answer to a write that was not started before its deadline. */
export function expiredWriteError(op: string): SessionDBError {
  return new SessionDBError("TIMEOUT", `${op} was not started before its deadline; it was not applied`);
}

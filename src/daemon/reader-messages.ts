/** Tasks sent to the daemon's reader threads, and their answers. */
import type { WireError } from "../errors.js";
import type { EngineOpName } from "../operation-catalogue.js";
import type { WatchFilter } from "../operations/watch-filter.js";

export interface ReaderConfig {
  path: string;
  busyTimeoutMs: number;
  /** Lets tests kill a reader thread on purpose (the `faultCrashReader` op). */
  faultInjection: boolean;
}

/**
 * What a reader thread runs: a read operation, `checkIntegrity` (sqlite/integrity-check.ts,
 * params `{ quick }`), the daemon's `check`, on the thread's snapshot, or `watchReplay` (a page
 * of a watch's replay, params `WatchReplay`).
 */
export type ReaderOp = EngineOpName | "checkIntegrity" | "watchReplay";

/** A page of a watch's replay: the filter's messages with `after < id <= upto`, at most `limit`. */
export interface WatchReplay {
  filter: WatchFilter;
  after: number;
  upto: number;
  limit: number;
}

export interface ReadTask {
  op: ReaderOp;
  params: unknown;
  /** Streamed operations: where the page starts (null for the first). */
  cursor?: unknown;
  /** Ms since the epoch: a read not started by then is answered TIMEOUT. */
  deadline: number;
  /** Fault injection only: the thread exits while serving this read instead of answering. */
  crash?: boolean;
  /** The result goes to a client as it is: the thread encodes it for the wire (`encoded`: its bytes, one per character). */
  encode?: boolean;
}

/** Errors travel as data: a thrown error would lose its code crossing the thread boundary. */
export type ReadOutcome = { ok: true; result: unknown } | { ok: true; encoded: string } | { ok: false; error: WireError };

/** Messages between the daemon's main thread and its writer thread. */
import type { WireError } from "../errors.js";
import type { FileIdentity } from "../file-identity.js";
import type { WriteOpName } from "../operation-catalogue.js";
import type { FeedEvent } from "../operations/watch-filter.js";
import type { WriterCrashPoint } from "../protocol/control.js";

export interface WriterConfig {
  path: string;
  /** The file the daemon serves: a commit made after `path` stops naming it is not acknowledged. */
  identity: FileIdentity;
  synchronous: "FULL" | "NORMAL";
  /** Most requests in one transaction. */
  maxBatch: number;
  /** Longest a transaction keeps adding requests (and so holds the write lock), in ms. */
  maxBatchMs: number;
  /** After this long of back-to-back transactions, the writer leaves the lock free… */
  yieldEveryMs: number;
  /** …for this long, so processes writing the file directly get their turn. */
  yieldMs: number;
  /** The WAL size the writer asks SQLite to keep (journal_size_limit). */
  walLimitBytes: number;
  /** Idle time after which a PASSIVE checkpoint runs. */
  idleCheckpointMs: number;
  /** How long a write's idempotency key is kept, at least, in hours; older ones are pruned in bounded steps. */
  keyRetentionHours: number;
  /** Lets tests crash the thread on purpose (the `faultCrashWriter` op); never set in production. */
  faultInjection: boolean;
  /**
   * Two float64s the thread sets to the first and last seq of the batch it is committing, from
   * just before COMMIT until that batch's outcomes are posted (0 and 0 otherwise). If the thread
   * dies in between, the daemon cannot know whether those writes were committed.
   */
  committing: SharedArrayBuffer;
}

export interface WriteJob {
  seq: number;
  op: WriteOpName;
  params: unknown;
  deadline: number;
  /** The write's idempotency key, or null. */
  key: string | null;
}

/** Writes arrive in arrays: one message carries every request received in one turn of the loop. */
export type ToWriter =
  | { type: "writes"; jobs: WriteJob[] }
  | { type: "checkpoint"; mode: "PASSIVE" | "TRUNCATE" }
  /** While on, no transaction begins (writes queue): the WAL is over its limit and a TRUNCATE is coming. */
  | { type: "hold"; on: boolean }
  | { type: "close" }
  /**
   * No client is connected (`serve --writer-idle`): the thread closes as at `close` if it has
   * nothing left to do (answered by its exit), else it answers `stayed` and goes on.
   */
  | { type: "stopIdle" }
  | { type: "crash"; at: WriterCrashPoint }
  /** Fault injection: caps the file at `pages` (PRAGMA max_page_count) to play a full disk; null lifts the cap. */
  | { type: "maxPageCount"; pages: number | null }
  /** The change feed on (answered `feedStarted` or `feedFailed`) or off: on while someone watches. */
  | { type: "feed"; on: boolean }
  /** Maintenance run between batches (`backup`, `optimize`), answered by a `maintained` with the same id. */
  | { type: "maintain"; id: number; task: MaintenanceTask };

/**
 * `backup`: the file copied into `dest` (an empty file) with SQLite's backup API, a few pages per
 * step between batches; `mergeIndexes`: the full-text indexes merged in short steps; `vacuum`:
 * VACUUM, which holds the write lock for its whole run.
 */
export type MaintenanceTask =
  | { kind: "backup"; dest: string }
  | { kind: "mergeIndexes" }
  | { kind: "vacuum" };

/** `backup`: the copy's page count, and the counts at the snapshot it holds (read as it completed). */
export interface BackupOutcome {
  pages: number;
  sessions: number;
  messages: number;
}

/** `mergeIndexes`: how many steps (transactions) the merge took, and the longest one. */
export interface MergeOutcome {
  indexes: string[];
  steps: number;
  maxStepMs: number;
}

export type WriteOutcome = { seq: number; ok: true; result: unknown } | { seq: number; ok: false; error: WireError };

export interface CheckpointResult {
  mode: "PASSIVE" | "TRUNCATE";
  busy: number;
  log: number;
  checkpointed: number;
}

export type FromWriter =
  /** `newerVersion`: the file's schema version when it is newer than ours (served read-only), else null. */
  | { type: "ready"; newerVersion: number | null }
  | { type: "failed"; error: WireError }
  /** `feed`, while the feed is on: what the batch changed, in commit order (absent when it is off or nothing was committed). */
  | { type: "batch"; outcomes: WriteOutcome[]; commitMs: number; lockMs: number; feed?: FeedEvent[] }
  /** The feed is on: every message with a greater id than `cursor` will be in its events. */
  | { type: "feedStarted"; cursor: number }
  | { type: "feedFailed"; error: WireError }
  /** What other processes committed (or a resync), between batches. */
  | { type: "feed"; events: FeedEvent[] }
  /** Requests answered without running: past their deadline, or the transaction could not begin. */
  | { type: "unapplied"; outcomes: WriteOutcome[] }
  /** `requested` is false for the writer's own idle checkpoints. */
  | { type: "checkpointed"; result: CheckpointResult; requested: boolean }
  | { type: "checkpointFailed"; error: WireError; requested: boolean }
  /** The `-wal` or `-shm` was removed or truncated under the daemon: no write is applied from now on, and the daemon stops. */
  | { type: "walLost"; kind: "removed" | "truncated"; message: string }
  /** A line for the daemon's log. */
  | { type: "log"; line: string }
  | { type: "maintained"; id: number; outcome: { ok: true; result: unknown } | { ok: false; error: WireError } }
  | { type: "closed" }
  /** The answer to a `stopIdle` the thread could not honour (upkeep or maintenance under way): it goes on. */
  | { type: "stayed" };

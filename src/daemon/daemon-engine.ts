/**
 * What the daemon needs of a database engine: a writer that group-commits queued writes, and
 * readers that serve reads in parallel with it. SQLite's are a writer thread and a pool of
 * reader threads; PostgreSQL's are a writer connection and a pool of reader connections
 * (src/daemon/pg-daemon-engine.ts). The socket, the protocol and the lifecycle are the daemon's own.
 */
import type { Page } from "../operations/page.js";
import type { EngineOpName, StreamOpName, WriteOpName } from "../operation-catalogue.js";
import type { ReaderStats, WriterCrashPoint, WriterStats } from "../protocol/control.js";
import type { Engine } from "../session-db.js";
import type { FeedEvent, WatchFilter } from "../operations/watch-filter.js";
import type { SessionDBError } from "../errors.js";
import type { ReadRequester } from "./reader-pool.js";
import type { CommitHistograms } from "./commit-histograms.js";
import type { BackupResult, CheckResult, OptimizeResult } from "../protocol/control.js";

export interface DaemonWriter {
  /** Writes accepted and not yet answered. */
  readonly queueDepth: number;
  /**
   * Runs the write in the next group commit; resolves once it is committed. With a `key`, once
   * per key (issue 25): a key already committed answers its first result, or IDEMPOTENCY_CONFLICT.
   */
  write(op: WriteOpName, params: unknown, deadline: number, key: string | null): Promise<unknown>;
  stats(): WriterStats;
  /** Group commits' sizes and COMMIT times since the start, and when the last one was. */
  histograms(): ReturnType<CommitHistograms["snapshot"]>;
  /** Fault injection: the writer dies (or fails its next batch as if it had) at `at`. */
  crash(at: WriterCrashPoint): void;
  /** Fault injection: caps the database's size (a full disk); null lifts the cap. */
  maxPageCount(pages: number | null): void;
  /** Lets every queued write finish, then stops. */
  close(): Promise<void>;
  /** SQLite: starts the writer thread again if it was ended idle (a client connects). */
  wake?(): void;
  /** SQLite: ends the writer thread, checkpointed, if nothing waits on it; true once it ended. */
  stopIdle?(): Promise<boolean>;
  /** SQLite: told when the writer thread starts again after an idle stop without a client (a spool replay, the WAL guard). */
  onWake?: (() => void) | null;
}

export interface DaemonReaders {
  /**
   * Runs a read; past `deadline` (epoch ms) it fails with TIMEOUT. `requester` is the client
   * that asked, whose reads may be dropped once it has gone.
   */
  run(op: EngineOpName, params: unknown, deadline: number, cursor?: unknown, requester?: ReadRequester): Promise<unknown>;
  /**
   * A read whose result goes to `requester` as it is, as its reply: like `run`, and it may
   * resolve with the result already encoded for the wire (an `EncodedResult`, SQLite's readers).
   */
  reply(op: EngineOpName, params: unknown, deadline: number, requester: ReadRequester): Promise<unknown>;
  /** Fault injection: the next `reads` reads fail as if their reader died. */
  crashDuringNextReads(reads: number): void;
  stats(): ReaderStats;
  close(): Promise<void>;
}

/**
 * The file's upkeep (the `backup`, `check` and `optimize` control ops): SQLite's. PostgreSQL has
 * its own tools (pg_dump, VACUUM, amcheck) and its engine has none.
 */
export interface DaemonMaintenance {
  /** Copies the file into `dest` (an empty file) between batches; the copy's counts at its snapshot. */
  backup(dest: string): Promise<BackupResult>;
  /** The integrity checks on a reader's snapshot; past `deadline` (epoch ms) TIMEOUT. */
  check(quick: boolean, deadline: number): Promise<CheckResult>;
  /** Merges the full-text indexes in short steps between batches, then VACUUMs if asked to. */
  optimize(vacuum: boolean): Promise<OptimizeResult>;
}

/** One streamed read's pages, all read on one snapshot taken when it was opened (issue 23 item 3). */
export interface ReadSnapshot {
  /** The page that starts at `cursor` (null: the first); past `deadline` (epoch ms) it fails with TIMEOUT. */
  page(cursor: unknown, deadline: number): Promise<Page<unknown, unknown>>;
  /** Ends the snapshot (idempotent). */
  close(): Promise<void>;
}

export interface SnapshotStats {
  /** Snapshots open now. */
  open: number;
  /** Pages read on them since the start. */
  pagesRead: number;
}

/** Where streamed reads (`exportAll`) get their snapshot. */
export interface DaemonSnapshots {
  /** Takes a snapshot for `op`; fails with TIMEOUT if none can be taken before `deadline`. */
  open(op: StreamOpName, params: unknown, deadline: number, requester?: ReadRequester): Promise<ReadSnapshot>;
  stats(): SnapshotStats;
  /** Ends every open snapshot (their streams fail with UNAVAILABLE) and takes no more. */
  close(): Promise<void>;
}

/**
 * The change feed an engine serves (issue 26), on while the daemon's watch hub has subscribers:
 * SQLite's writer thread tells what each batch committed and polls for other processes' commits
 * (src/daemon/sqlite-feed.ts).
 */
export interface DaemonFeed {
  /**
   * Turns the feed on: `listener` gets every commit's events in commit order from then on (a
   * `resync` when the engine cannot tell what changed). Resolves with the cursor from which every
   * message committed is in the events.
   */
  start(listener: (events: FeedEvent[]) => void): Promise<number>;
  /** Turns it off: no one watches. */
  stop(): void;
  /** The filter's messages with `after < id <= upto`, oldest first, at most `limit`; past `deadline` (epoch ms) TIMEOUT. */
  replay(filter: WatchFilter, after: number, upto: number, limit: number, deadline: number, requester?: ReadRequester): Promise<FeedEvent[]>;
}

/** A started engine: its writer and readers, and what stops anything else it runs. */
export interface DaemonEngine {
  readonly engine: Engine;
  readonly writer: DaemonWriter;
  readonly readers: DaemonReaders;
  readonly snapshots: DaemonSnapshots;
  /**
   * Resolves with why once the engine's files were damaged under it (SQLite: its `-wal` or
   * `-shm` removed or truncated): it applies no more writes, and the daemon stops, failing.
   */
  readonly filesLost?: Promise<string>;
  /** Stops the engine's own housekeeping (SQLite's WAL guard) before the writer closes. */
  stopHousekeeping(): void;
  /**
   * True when a newer sessiondb made the database: it is served read-only and every write fails
   * with SCHEMA (hello and stats say so).
   */
  readonly readOnly: boolean;
  /** The database's own schema version (above this sessiondb's when `readOnly`). */
  readonly fileSchemaVersion: number;
  /** The SCHEMA error a write gets while `readOnly`. */
  readOnlyError(op: string): SessionDBError;
  /** The change feed `watch` is served from; null when the engine serves none (watch answers UNAVAILABLE). */
  readonly feed: DaemonFeed | null;
  /** Backup, check and optimize; null when the engine has none (PostgreSQL). */
  readonly maintenance: DaemonMaintenance | null;
  /** Said in the "listening" line of the log. */
  readonly description: string;
}

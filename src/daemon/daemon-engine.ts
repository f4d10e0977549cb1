/**
 * What the daemon needs of a database engine: a writer that group-commits queued writes, and
 * readers that serve reads in parallel with it. SQLite's are a writer thread and a pool of
 * reader threads; PostgreSQL's are a writer connection and a pool of reader connections
 * (src/pg/pg-daemon-engine.ts). The socket, the protocol and the lifecycle are the daemon's own.
 */
import type { OpName, WriteOpName } from "../operation-catalogue.js";
import type { ReaderStats, WriterCrashPoint, WriterStats } from "../protocol/control.js";
import type { Engine } from "../session-db.js";
import type { SessionDBError } from "../errors.js";
import type { ReadRequester } from "./reader-pool.js";

export interface DaemonWriter {
  /** Writes accepted and not yet answered. */
  readonly queueDepth: number;
  /** Runs the write in the next group commit; resolves once it is committed. */
  write(op: WriteOpName, params: unknown, deadline: number): Promise<unknown>;
  stats(): WriterStats;
  /** Fault injection: the writer dies (or fails its next batch as if it had) at `at`. */
  crash(at: WriterCrashPoint): void;
  /** Fault injection: caps the database's size (a full disk); null lifts the cap. */
  maxPageCount(pages: number | null): void;
  /** Lets every queued write finish, then stops. */
  close(): Promise<void>;
}

export interface DaemonReaders {
  /**
   * Runs a read; past `deadline` (epoch ms) it fails with TIMEOUT. `requester` is the client
   * that asked, whose reads may be dropped once it has gone.
   */
  run(op: OpName, params: unknown, deadline: number, cursor?: unknown, requester?: ReadRequester): Promise<unknown>;
  /** Fault injection: the next `reads` reads fail as if their reader died. */
  crashDuringNextReads(reads: number): void;
  stats(): ReaderStats;
  close(): Promise<void>;
}

/** A started engine: its writer and readers, and what stops anything else it runs. */
export interface DaemonEngine {
  readonly engine: Engine;
  readonly writer: DaemonWriter;
  readonly readers: DaemonReaders;
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
  /** Said in the "listening" line of the log. */
  readonly description: string;
}

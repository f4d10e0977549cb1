import Database from "better-sqlite3";

/** What a write statement reports. */
export interface RunResult {
  changes: number;
  lastInsertRowid: number | bigint;
}

/** A prepared statement: the part of better-sqlite3's the engine uses. */
export interface Statement {
  run(...params: unknown[]): RunResult;
  get(...params: unknown[]): unknown;
  all(...params: unknown[]): unknown[];
  /** Rows one at a time; leaving the loop early ends the query. */
  iterate(...params: unknown[]): IterableIterator<unknown>;
  /** Rows as their first column's value. */
  pluck(toggle?: boolean): this;
  /** Rows as arrays of their columns' values, in the SELECT's order. */
  raw(toggle?: boolean): this;
}

/**
 * One SQLite connection, as the engine uses it: a structural subset of better-sqlite3's
 * `Database`, so this module alone depends on the driver and the rest is written against what
 * it needs (as kysely does).
 */
export interface Connection {
  prepare(source: string): Statement;
  exec(source: string): this;
  pragma(source: string, options?: { simple?: boolean }): unknown;
  close(): this;
  /**
   * SQLite's online backup into `destination`, one step per turn of the event loop; `progress`
   * runs after each step and returns the pages the next one copies (throwing stops the backup).
   */
  backup(destination: string, options?: { progress?: (step: BackupStep) => number | undefined }): Promise<BackupStep>;
  readonly inTransaction: boolean;
  readonly open: boolean;
}

/** Where a backup stands after a step. */
export interface BackupStep {
  totalPages: number;
  remainingPages: number;
}

export interface ConnectionOptions {
  readonly?: boolean;
  /** SQLite's own busy wait before a locked call fails with SQLITE_BUSY. */
  busyTimeoutMs: number;
  /** `FULL` (the default) survives power loss; `NORMAL` may lose the last commits on power loss. */
  synchronous?: "FULL" | "NORMAL";
  /** Switch a writable connection's file to WAL (default true). */
  wal?: boolean;
}

/** Opens a connection with the pragmas every connection to the file uses (SPEC §1). */
export function openConnection(path: string, options: ConnectionOptions): Connection {
  const db = new Database(path, {
    readonly: options.readonly ?? false,
    fileMustExist: options.readonly ?? false,
    timeout: options.busyTimeoutMs,
  });
  try {
    if (!options.readonly && options.wal !== false) db.pragma("journal_mode = WAL");
    db.pragma("foreign_keys = ON");
    db.pragma(`synchronous = ${options.synchronous ?? "FULL"}`);
  } catch (err) {
    db.close();
    throw err;
  }
  return db;
}

/**
 * A plain connection with no pragmas and no busy wait: the daemon's instance lock, a small file
 * of its own whose exclusive lock is the point.
 */
export function openLockFile(path: string): Connection {
  return new Database(path, { timeout: 0 });
}

const statements = new WeakMap<Connection, Map<string, Statement>>();
const MAX_CACHED_STATEMENTS = 256;

/** A prepared statement for this SQL on this connection, prepared once and reused. */
export function sql(db: Connection, text: string): Statement {
  let cache = statements.get(db);
  if (cache === undefined) {
    cache = new Map();
    statements.set(db, cache);
  }
  let stmt = cache.get(text);
  if (stmt === undefined) {
    if (cache.size >= MAX_CACHED_STATEMENTS) cache.clear();
    stmt = db.prepare(text);
    cache.set(text, stmt);
  }
  return stmt;
}

export { now } from "../operations/clock.js";
export { escapeLike } from "../operations/like-pattern.js";

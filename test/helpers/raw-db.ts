/**
 * A second, raw connection to a database file, as another process would open it. Tests use it
 * to set times (ordering, prune ages, compression chains), to plant damaged rows and to
 * bulk-insert. A PostgreSQL URL is reached through psql instead (./raw-pg.ts). Every call opens its own connection and closes it, so nothing is left open and
 * the store under test (direct or daemon) sees the change as it would any other writer's.
 */
import Database from "better-sqlite3";
import { isPostgresUrl } from "../../src/database-location.js";
import { pgAll, pgRun, pgWrite, type PgRawWriter } from "./raw-pg.js";

type Raw = Database.Database;
type Params = unknown[];

const BUSY_TIMEOUT_MS = 5000;

function openRaw(path: string): Raw {
  const db = new Database(path, { fileMustExist: true, timeout: BUSY_TIMEOUT_MS }); // timeout: SQLite's busy_timeout
  db.pragma("foreign_keys = ON");
  return db;
}

/** Runs `fn` in `BEGIN IMMEDIATE … COMMIT` on a fresh connection, then closes it. */
export function rawWrite<T>(path: string, fn: (db: Raw) => T): T {
  // The PostgreSQL writer has the part of the interface the tests use (prepare/run, exec).
  if (isPostgresUrl(path)) return pgWrite(path, fn as unknown as (db: PgRawWriter) => T);
  const db = openRaw(path);
  try {
    db.exec("BEGIN IMMEDIATE");
    try {
      const result = fn(db);
      db.exec("COMMIT");
      return result;
    } catch (err) {
      if (db.inTransaction) db.exec("ROLLBACK");
      throw err;
    }
  } finally {
    db.close();
  }
}

/** One write statement; returns the number of rows it changed. */
export function rawRun(path: string, sql: string, ...params: Params): number {
  if (isPostgresUrl(path)) return pgRun(path, sql, params);
  return rawWrite(path, (db) => db.prepare(sql).run(...params).changes);
}

export function rawAll<T = Record<string, unknown>>(path: string, sql: string, ...params: Params): T[] {
  if (isPostgresUrl(path)) return pgAll<T>(path, sql, params);
  const db = openRaw(path);
  try {
    return db.prepare(sql).all(...params) as T[];
  } finally {
    db.close();
  }
}

export function rawGet<T = Record<string, unknown>>(path: string, sql: string, ...params: Params): T | undefined {
  return rawAll<T>(path, sql, ...params)[0];
}

/** Sets columns of one row by id (column names come from the test, never from data). */
export function rawUpdate(path: string, table: "sessions" | "messages", id: string | number, values: Record<string, unknown>): void {
  const columns = Object.keys(values);
  const changed = rawRun(
    path,
    `UPDATE ${table} SET ${columns.map((c) => `${c} = @${c}`).join(", ")} WHERE id = @__id`,
    { ...values, __id: id },
  );
  if (changed !== 1) throw new Error(`rawUpdate: no ${table} row with id ${String(id)}`);
}

/**
 * How the PostgreSQL engine runs an operation of the catalogue: a function of ours over a
 * PostgreSQL connection, on the arguments `parseOperation` (operations/operation-params.ts, the
 * same checks as SQLite's, so both refuse the same input with the same error) checked. Writes run inside a transaction owned by the
 * caller (direct mode, or the daemon's writer with a savepoint per request).
 */
import type { OPERATIONS, EngineOpName, ResultOf } from "../operation-catalogue.js";
import type { CheckedParams } from "../operations/operation-params.js";
import type { Page } from "../operations/page.js";
import type { PgQueryable } from "./pg-connection.js";

export type PgRunner<K extends EngineOpName> = (typeof OPERATIONS)[K]["kind"] extends "stream"
  ? (db: PgQueryable, params: CheckedParams<K>, cursor: unknown) => Promise<Page<ResultOf<K>, unknown>>
  : (db: PgQueryable, params: CheckedParams<K>) => Promise<ResultOf<K>>;

export type PgRunners = { [K in EngineOpName]: PgRunner<K> };

/** The rows of a query. */
export async function rows<T>(db: PgQueryable, text: string, values: readonly unknown[] = []): Promise<T[]> {
  return (await db.query(text, values)).rows as T[];
}

/** The first row of a query, or undefined. */
export async function one<T>(db: PgQueryable, text: string, values: readonly unknown[] = []): Promise<T | undefined> {
  return (await db.query(text, values)).rows[0] as T | undefined;
}

/** Rows a write statement changed. */
export async function changes(db: PgQueryable, text: string, values: readonly unknown[] = []): Promise<number> {
  return (await db.query(text, values)).rowCount ?? 0;
}

const UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";

/**
 * `column LIKE pattern` (backslash escapes) ignoring the case of ASCII letters only, as SQLite's
 * LIKE does: ILIKE would fold `É` to `é` too.
 */
export function likeAsciiCase(column: string, pattern: string): string {
  return `translate(${column}, '${UPPER}', '${UPPER.toLowerCase()}') LIKE translate(${pattern}, '${UPPER}', '${UPPER.toLowerCase()}')`;
}

/** A filter list the engine passed as JSON text, as an array for `= ANY($n)` (null: no filter). */
export function list(json: string | null): string[] | null {
  return json === null ? null : (JSON.parse(json) as string[]);
}

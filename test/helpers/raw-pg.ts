/**
 * raw-db.ts for a PostgreSQL URL: the same synchronous helpers, through `psql` (a separate
 * process, as another writer would be). SQLite-style `?` and `@name` parameters become SQL
 * literals (test data only). A `rawWrite` callback's statements run together in one transaction
 * when it returns.
 */
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { postgresBinDir } from "./postgres-server.js";

type Params = unknown[];

function literal(value: unknown): string {
  if (value === null || value === undefined) return "NULL";
  if (typeof value === "number" || typeof value === "bigint") return String(value);
  if (typeof value === "boolean") return value ? "TRUE" : "FALSE";
  const text = typeof value === "string" ? value : JSON.stringify(value);
  return `'${text.replace(/'/g, "''")}'`;
}

/** Inlines SQLite-style parameters: positional `?`, or `@name` from one object. */
export function inline(sql: string, params: Params): string {
  const named = params.length === 1 && typeof params[0] === "object" && params[0] !== null && !Array.isArray(params[0]);
  if (named) {
    const values = params[0] as Record<string, unknown>;
    return sql.replace(/@(\w+)/g, (_, name: string) => literal(values[name]));
  }
  let next = 0;
  return sql.replace(/\?/g, () => literal(params[next++]));
}

export function psql(url: string, sql: string): string {
  const result = spawnSync(join(postgresBinDir(), "psql"), ["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", url], {
    input: sql,
    encoding: "utf8",
    maxBuffer: 256 * 1024 * 1024,
  });
  if (result.status !== 0) throw new Error(`psql failed: ${result.stderr}`);
  return result.stdout;
}

export function pgAll<T>(url: string, sql: string, params: Params): T[] {
  const out = psql(url, `SELECT COALESCE(json_agg(t), '[]') FROM (${inline(sql, params)}) t;`);
  return JSON.parse(out) as T[];
}

export function pgRun(url: string, sql: string, params: Params): number {
  const out = psql(url, `WITH changed AS (${inline(sql, params)} RETURNING 1) SELECT count(*) FROM changed;`);
  return Number(out.trim());
}

/** What a `rawWrite` callback gets: statements queued, run in one transaction at the end. */
export interface PgRawWriter {
  prepare(sql: string): { run(...params: Params): { changes: number } };
  exec(sql: string): void;
}

export function pgWrite<T>(url: string, fn: (db: PgRawWriter) => T): T {
  const script: string[] = ["BEGIN;"];
  const result = fn({
    prepare: (sql) => ({
      run: (...params) => {
        script.push(`${inline(sql, params)};`);
        return { changes: 1 };
      },
    }),
    exec: (sql) => void script.push(`${sql};`),
  });
  script.push("COMMIT;");
  psql(url, script.join("\n"));
  return result;
}

/**
 * The only module that loads node-postgres, and only when a pool is opened: it is a tenth of a
 * second of every start (the CLI, `serve`, a library import) that never touches PostgreSQL. The
 * engine is written against `PgQueryable`, a structural subset that a pooled client and a pool
 * both have (as the SQLite engine is written against `Connection`).
 */
import type pg from "pg";

export interface PgResult {
  rows: Array<Record<string, unknown>>;
  rowCount: number | null;
}

/** What the engine needs of a connection: a query with positional (`$1`) parameters. */
export interface PgQueryable {
  query(text: string, values?: readonly unknown[]): Promise<PgResult>;
}

/** A connection taken from a pool for a transaction; given back with `release`. */
export interface PgClient extends PgQueryable {
  release(destroy?: boolean | Error): void;
}

export interface PgPool extends PgQueryable {
  connect(): Promise<PgClient>;
  end(): Promise<void>;
  readonly totalCount: number;
  readonly idleCount: number;
  readonly waitingCount: number;
}

const INT8_OID = 20;

/**
 * Counts (`COUNT(*)`, bigint ids and counters) come back as JavaScript numbers, like SQLite's:
 * node-postgres would give strings. Every value the store writes is a safe integer.
 */
function typeParsers(driver: typeof pg): { getTypeParser: typeof pg.types.getTypeParser } {
  return {
    getTypeParser: ((oid: number, format?: string) =>
      oid === INT8_OID ? (value: string) => Number(value) : driver.types.getTypeParser(oid, format as "text")) as typeof pg.types.getTypeParser,
  };
}

export interface PgPoolOptions {
  /** Connections at most. */
  max: number;
  /** Shown in pg_stat_activity. */
  applicationName: string;
  /** Told when the server drops one of the pool's connections (the pool connects anew as needed). */
  onConnectionLost?: (err: Error) => void;
}

/** A pool of connections to the database at `url` (PG* variables fill what the URL leaves out). */
export async function openPgPool(url: string, options: PgPoolOptions): Promise<PgPool> {
  const { default: driver } = await import("pg");
  const pool = new driver.Pool({
    connectionString: url,
    max: options.max,
    application_name: options.applicationName,
    types: typeParsers(driver),
    idleTimeoutMillis: 30_000,
  });
  // A connection the server drops (restart, pg_terminate_backend, a network failure) emits
  // 'error'; with no listener Node throws it and the process dies. pg-pool listens only while a
  // connection is idle and removes its listener on checkout, so each connection gets a listener of
  // ours for its whole life: the query in flight rejects with the failure (the engine maps it),
  // the connection is no longer queryable, and pg-pool drops it on release.
  pool.on("connect", (client: pg.PoolClient) => {
    let told = false; // a dropped connection emits twice (the server's FATAL, then the socket's end)
    client.on("error", (err: Error) => {
      if (!told) options.onConnectionLost?.(err);
      told = true;
    });
  });
  pool.on("error", () => undefined);
  return pool as unknown as PgPool;
}

/** Runs `fn` on one connection borrowed from the pool, and gives it back whatever happens. */
export async function withPoolClient<T>(pool: PgPool, fn: (client: PgClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    return await fn(client);
  } finally {
    client.release();
  }
}

/** A connection of its own, outside any pool, that LISTENs (pg-change-feed.ts). */
export interface PgListenClient extends PgQueryable {
  /** Called with each notification's payload, in the order the server sends them. */
  onNotification(fn: (channel: string, payload: string) => void): void;
  /** Called once when the connection fails or the server ends it. */
  onLost(fn: (err: Error) => void): void;
  end(): Promise<void>;
}

/** Connects one client for LISTEN to the database at `url`. */
export async function openPgListenClient(url: string, applicationName: string): Promise<PgListenClient> {
  const { default: driver } = await import("pg");
  const client = new driver.Client({ connectionString: url, application_name: applicationName, types: typeParsers(driver) });
  let lost: ((err: Error) => void) | null = null;
  let told = false;
  const tell = (err: Error) => {
    if (told) return;
    told = true;
    lost?.(err);
  };
  client.on("error", tell);
  client.on("end", () => tell(new Error("the server closed the connection")));
  await client.connect();
  let ended = false;
  return {
    query: (text, values) => client.query(text, values as unknown[]) as unknown as Promise<PgResult>,
    onNotification: (fn) => client.on("notification", (n) => fn(n.channel, n.payload ?? "")),
    onLost: (fn) => {
      lost = (err) => {
        if (!ended) fn(err);
      };
    },
    end: async () => {
      ended = true;
      await client.end().catch(() => undefined);
    },
  };
}

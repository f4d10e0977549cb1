import type { DaemonEngine } from "./daemon-engine.js";
import type { ResolvedDaemonOptions } from "./daemon-options.js";
import { DEFAULT_RETRY } from "../operations/retry-policy.js";
import { openPgPool } from "../pg/pg-connection.js";
import { toPgSessionDBError } from "../pg/pg-errors.js";
import { openPgDatabase } from "../pg/pg-open.js";
import { PgReaders } from "./pg-readers.js";
import { PgSnapshots } from "./pg-snapshots.js";
import { PgWriter } from "./pg-writer.js";
import { PgFeed } from "./pg-feed.js";
import { readOnly } from "../pg/pg-errors.js";
import { PG_SCHEMA_VERSION, pgSchemaVersion } from "../pg/pg-schema.js";

/**
 * The daemon's PostgreSQL engine: one writer connection (group commit) and `readers` reader
 * connections. Nothing here assumes the daemon is alone on the database: counters are updated in
 * SQL, titles are unique by the database's index, conflicts are retried.
 */
export async function startPgEngine(resolved: ResolvedDaemonOptions): Promise<DaemonEngine> {
  // The pools connect again on their own; the log says why requests failed or waited meanwhile.
  const lost = (which: string) => (err: Error) => resolved.log(`PostgreSQL dropped a ${which} connection (${err.message}); reconnecting as needed`);
  const writerPool = await openPgPool(resolved.path, { max: 1, applicationName: "sessiondb daemon writer", onConnectionLost: lost("writer") });
  const readerPool = await openPgPool(resolved.path, {
    max: resolved.readers,
    applicationName: "sessiondb daemon reader",
    onConnectionLost: lost("reader"),
  });
  // Connects only when an export runs.
  const exportPool = await openPgPool(resolved.path, {
    max: resolved.readers,
    applicationName: "sessiondb daemon export",
    onConnectionLost: lost("export"),
  });
  try {
    const writable = await openPgDatabase(writerPool);
    const fileSchemaVersion = writable ? PG_SCHEMA_VERSION : await pgSchemaVersion(writerPool);
    const writer = new PgWriter(writerPool, { maxBatch: resolved.maxBatch, retry: DEFAULT_RETRY, writable, keyRetentionHours: resolved.keyRetentionHours });
    return {
      engine: "postgres",
      writer,
      readers: new PgReaders(readerPool, resolved.readers),
      snapshots: new PgSnapshots(exportPool),
      stopHousekeeping: () => undefined,
      readOnly: !writable,
      fileSchemaVersion,
      readOnlyError: () => readOnly(),
      maintenance: null,
      // LISTEN/NOTIFY (pg/pg-changes.ts), on while someone watches.
      feed: new PgFeed(resolved.path, readerPool, resolved.log, (listening) => writer.holdWhile(listening)),
      description: `PostgreSQL, ${resolved.readers} reader connections`,
    };
  } catch (err) {
    await writerPool.end().catch(() => undefined);
    await readerPool.end().catch(() => undefined);
    await exportPool.end().catch(() => undefined);
    throw toPgSessionDBError(err);
  }
}

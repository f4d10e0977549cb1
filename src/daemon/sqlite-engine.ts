import type { FileIdentity } from "../file-identity.js";
import type { DaemonEngine } from "./daemon-engine.js";
import type { DirectoryWatch } from "./directory-watch.js";
import type { ResolvedDaemonOptions } from "./daemon-options.js";
import { ExportThreads } from "./export-threads.js";
import { ReaderPool } from "./reader-pool.js";
import { SqliteMaintenance } from "./sqlite-maintenance.js";
import { SqliteFeed } from "./sqlite-feed.js";
import { WalGuard } from "./wal-guard.js";
import { WriterClient } from "./writer-client.js";
import { SCHEMA_VERSION } from "../sqlite/schema.js";
import { newerSchemaError } from "../sqlite/database-file.js";

/**
 * The SQLite engine of the daemon: the writer thread, the reader threads, and the WAL guard
 * (told of writes to the WAL by `directory`).
 */
export async function startSqliteEngine(resolved: ResolvedDaemonOptions, identity: FileIdentity, directory: DirectoryWatch): Promise<DaemonEngine> {
  const writer = await WriterClient.start({
    path: resolved.path,
    identity,
    synchronous: resolved.synchronous,
    maxBatch: resolved.maxBatch,
    maxBatchMs: resolved.maxBatchMs,
    yieldEveryMs: resolved.yieldEveryMs,
    yieldMs: resolved.yieldMs,
    walLimitBytes: resolved.walLimitBytes,
    idleCheckpointMs: resolved.idleCheckpointMs,
    keyRetentionHours: resolved.keyRetentionHours,
    faultInjection: resolved.faultInjection,
  }, resolved.log);
  try {
    const readers = new ReaderPool(resolved.readers, resolved.readerIdleMs, {
      path: resolved.path,
      busyTimeoutMs: resolved.readerBusyTimeoutMs,
      faultInjection: resolved.faultInjection,
    }, resolved.log);
    const snapshots = new ExportThreads(resolved.path, resolved.readerBusyTimeoutMs, resolved.readers);
    const walGuard = new WalGuard(resolved.files.wal, resolved.walLimitBytes, writer, readers, snapshots, directory, resolved.log);
    return {
      engine: "sqlite",
      writer,
      readers,
      snapshots,
      filesLost: writer.walLost,
      stopHousekeeping: () => walGuard.stop(),
      readOnly: writer.newerVersion !== null,
      fileSchemaVersion: writer.newerVersion ?? SCHEMA_VERSION,
      readOnlyError: (op) => newerSchemaError(resolved.path, writer.newerVersion ?? SCHEMA_VERSION, op),
      maintenance: new SqliteMaintenance(resolved.files, writer, readers),
      feed: new SqliteFeed(writer, readers),
      description: `${resolved.readers} readers, synchronous=${resolved.synchronous}`,
    };
  } catch (err) {
    await writer.close();
    throw err;
  }
}

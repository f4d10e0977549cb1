import type { DaemonEngine } from "./daemon-engine.js";
import type { ResolvedDaemonOptions } from "./daemon-options.js";
import { ReaderPool } from "./reader-pool.js";
import { WalGuard } from "./wal-guard.js";
import { WriterClient } from "./writer-client.js";

/** The SQLite engine of the daemon: the writer thread, the reader threads, and the WAL guard. */
export async function startSqliteEngine(resolved: ResolvedDaemonOptions): Promise<DaemonEngine> {
  const writer = await WriterClient.start({
    path: resolved.path,
    synchronous: resolved.synchronous,
    maxBatch: resolved.maxBatch,
    maxBatchMs: resolved.maxBatchMs,
    yieldEveryMs: resolved.yieldEveryMs,
    yieldMs: resolved.yieldMs,
    walLimitBytes: resolved.walLimitBytes,
    idleCheckpointMs: resolved.idleCheckpointMs,
    faultInjection: resolved.faultInjection,
  });
  try {
    const readers = new ReaderPool(resolved.readers, {
      path: resolved.path,
      busyTimeoutMs: resolved.readerBusyTimeoutMs,
      faultInjection: resolved.faultInjection,
    });
    const walGuard = new WalGuard(resolved.files.wal, resolved.walLimitBytes, writer, readers, resolved.log);
    return {
      engine: "sqlite",
      writer,
      readers,
      stopHousekeeping: () => walGuard.stop(),
      description: `${resolved.readers} readers, synchronous=${resolved.synchronous}`,
    };
  } catch (err) {
    await writer.close();
    throw err;
  }
}

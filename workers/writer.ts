/**
 * The writer thread: the daemon's only write connection, and its group-commit loop.
 *
 * Everything queued runs in one transaction per batch (group-commit.ts), answered only after
 * COMMIT, so an acknowledged write is durable. When another process holds the lock, the writer
 * waits with a jittered retry and never fails a queued request for it (writer-loop.ts). Between
 * batches it keeps the WAL (wal-upkeep.ts) and the CJK index (cjk-upkeep.ts) and runs maintenance
 * (writer-maintenance.ts); before each commit it checks the files are still its own (file-guard.ts).
 */
import { parentPort, workerData } from "node:worker_threads";
import { toWireError } from "../src/errors.js";
import { openDatabase } from "../src/sqlite/open-database.js";
import type { FromWriter, ToWriter, WriterConfig } from "../src/daemon/writer-messages.js";
import { ensureCjkIndex } from "./cjk-upkeep.js";
import { FileGuard } from "./file-guard.js";
import { prepareTransactionStatements } from "./writer-context.js";
import { WriterLoop } from "./writer-loop.js";
import { LOCK_BUSY_TIMEOUT_MS, OPEN_RETRY } from "./writer-waits.js";
import { nameThread } from "./thread-name.js";

nameThread("sdb-writer");

const config = workerData as WriterConfig;
const port = parentPort!;
const post = (message: FromWriter): void => port.postMessage(message);

/** Opens the file (read-only when a newer Hermes made it) and the loop over it; null when it cannot be opened (the daemon is told). */
function openWriter(): WriterLoop | null {
  try {
    const opened = openDatabase(config.path, {
      busyTimeoutMs: LOCK_BUSY_TIMEOUT_MS,
      synchronous: config.synchronous,
      retry: OPEN_RETRY,
      create: true,
    });
    const conn = opened.db;
    const closePort = (): void => port.close();
    if (opened.newerVersion !== null) {
      const ctx = { config, conn, newerVersion: opened.newerVersion, tx: null, post };
      return new WriterLoop(ctx, FileGuard.unwatched(ctx), false, closePort);
    }
    conn.pragma(`journal_size_limit = ${Math.floor(config.walLimitBytes)}`);
    const cjkIndexed = ensureCjkIndex({ conn, post });
    const guard = FileGuard.watch({ config, post });
    const ctx = { config, conn, newerVersion: null, tx: prepareTransactionStatements(conn), post };
    return new WriterLoop(ctx, guard, cjkIndexed, closePort);
  } catch (err) {
    post({ type: "failed", error: toWireError(err) });
    return null;
  }
}

const writer = openWriter();
if (writer !== null) {
  port.on("message", (message: ToWriter) => writer.receive(message));
  post({ type: "ready", newerVersion: writer.newerVersion });
  writer.start();
}

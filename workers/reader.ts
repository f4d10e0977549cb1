/**
 * A reader thread of the daemon's piscina pool: one read-only connection, opened once, serving
 * searches, listings, exports and every other read in parallel with the writer. Each task is
 * its own read transaction, so it sees exactly what was committed when it started.
 */
import { workerData } from "piscina";
import { toWireError } from "../src/errors.js";
import { openConnection, type Connection } from "../src/sqlite/connection.js";
import { checkIntegrity, type CheckOptions } from "../src/sqlite/integrity-check.js";
import { runOperation } from "../src/sqlite/operations.js";
import { DEFAULT_RETRY, retryBusySync } from "../src/sqlite/transaction.js";
import type { ReadOutcome, ReadTask, ReaderConfig, WatchReplay } from "../src/daemon/reader-messages.js";
import { messagesAfter } from "../src/sqlite/change-reader.js";
import { encodeResult } from "../src/protocol/wire-reals.js";
import { nameThread } from "./thread-name.js";

nameThread("sdb-reader");

const config = workerData as ReaderConfig;
let db: Connection | null = null;

/** Opened on the first task, so a file that cannot be opened fails that read with its code
 *  (IO, CORRUPT) instead of keeping the thread from starting. */
function connection(): Connection {
  db ??= openConnection(config.path, { readonly: true, busyTimeoutMs: config.busyTimeoutMs });
  return db;
}

export default function read(task: ReadTask): ReadOutcome {
  if (task.crash === true && config.faultInjection) process.exit(1);
  if (Date.now() >= task.deadline) {
    return { ok: false, error: { code: "TIMEOUT", message: `${task.op} waited for a reader thread past its deadline; it did not run` } };
  }
  try {
    const { op } = task;
    const result = op === "checkIntegrity"
      ? checkIntegrity(connection(), task.params as CheckOptions)
      : op === "watchReplay"
        ? retryBusySync(DEFAULT_RETRY, () => replayPage(connection(), task.params as WatchReplay))
        : retryBusySync(DEFAULT_RETRY, () => runOperation(connection(), op, task.params, task.cursor ?? null));
    // A reply's result is encoded here, beside the query, rather than copied to the main thread
    // as objects and encoded there.
    return task.encode === true ? { ok: true, encoded: encodeResult(result) } : { ok: true, result };
  } catch (err) {
    return { ok: false, error: toWireError(err) };
  }
}

function replayPage(db: Connection, page: WatchReplay): unknown {
  return messagesAfter(db, page.filter, page.after, page.upto, page.limit);
}

/**
 * A reader thread of the daemon's piscina pool: one read-only connection, opened once, serving
 * searches, listings, exports and every other read in parallel with the writer. Each task is
 * its own read transaction, so it sees exactly what was committed when it started.
 */
import { workerData } from "piscina";
import { toWireError } from "../src/errors.js";
import { openConnection } from "../src/engine/connection.js";
import { operations } from "../src/engine/operations.js";
import { DEFAULT_RETRY, retryBusySync } from "../src/engine/transaction.js";
import type { ReadOutcome, ReadTask, ReaderConfig } from "../src/protocol/reader-messages.js";

const config = workerData as ReaderConfig;
const db = openConnection(config.path, { readonly: true, busyTimeoutMs: config.busyTimeoutMs });

export default function read(task: ReadTask): ReadOutcome {
  if (task.crash === true && config.faultInjection) process.exit(1);
  try {
    const op = operations[task.op];
    const result = retryBusySync(DEFAULT_RETRY, () =>
      op.kind === "stream" ? op.page(db, task.params as never, (task.cursor ?? null) as never) : op.run(db, task.params as never),
    );
    return { ok: true, result };
  } catch (err) {
    return { ok: false, error: toWireError(err) };
  }
}


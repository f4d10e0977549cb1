/**
 * An export thread of the daemon: one `exportAll` on one read snapshot (issue 23 item 3). The
 * reader pool's threads serve one read each and any of them may get the next page, so a stream
 * whose pages must share one read transaction gets a thread (and a connection) of its own, for
 * as long as it lasts. It reads a page when asked, so the client's pace sets the memory held.
 */
import { parentPort, workerData } from "node:worker_threads";
import { toWireError } from "../src/errors.js";
import { ExportSnapshot } from "../src/sqlite/export-snapshot.js";
import type { ExporterConfig, FromExporter, ToExporter } from "../src/daemon/export-messages.js";
import { nameThread } from "./thread-name.js";

nameThread("sdb-exporter");

const config = workerData as ExporterConfig;
const port = parentPort!;

function post(message: FromExporter): void {
  port.postMessage(message);
}

let snapshot: ExportSnapshot | null = null;
try {
  snapshot = ExportSnapshot.open(config.path, config.busyTimeoutMs);
  post({ type: "ready" });
} catch (err) {
  post({ type: "error", error: toWireError(err) });
}

port.on("message", (message: ToExporter) => {
  if (message.type === "close" || snapshot === null) {
    snapshot?.close();
    snapshot = null;
    port.close();
    return;
  }
  try {
    post({ type: "page", page: snapshot.page(config.op, config.params, message.cursor) });
  } catch (err) {
    post({ type: "error", error: toWireError(err) });
  }
});

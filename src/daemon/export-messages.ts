/** Messages between the daemon's main thread and an export thread (workers/exporter.ts). */
import type { WireError } from "../errors.js";
import type { Page } from "../operations/page.js";
import type { StreamOpName } from "../operation-catalogue.js";

export interface ExporterConfig {
  path: string;
  busyTimeoutMs: number;
  op: StreamOpName;
  params: unknown;
}

export type ToExporter = { type: "page"; cursor: unknown } | { type: "close" };

export type FromExporter =
  /** The snapshot is taken: the export has begun. */
  | { type: "ready" }
  | { type: "page"; page: Page<unknown, unknown> }
  | { type: "error"; error: WireError };

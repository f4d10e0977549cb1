/**
 * A page of a streamed read on a snapshot. Apart from pg-snapshot.ts, which the engine's own
 * reads use (pg-transfer.ts), so the snapshot does not import the table of runners that imports them.
 */
import { SessionDBError } from "../errors.js";
import type { EngineOpName } from "../operation-catalogue.js";
import type { Page } from "../operations/page.js";
import { toPgSessionDBError } from "./pg-errors.js";
import { runPgPage } from "./pg-operations.js";
import type { PgSnapshot } from "./pg-snapshot.js";

export function snapshotPage(snapshot: PgSnapshot, op: EngineOpName, params: unknown, cursor: unknown): Promise<Page<unknown, unknown>> {
  if (snapshot.closed) return Promise.reject(new SessionDBError("CLOSED", `${op}: its snapshot was closed`));
  return runPgPage(snapshot.client, op, params, cursor).catch((err: unknown) => Promise.reject(toPgSessionDBError(err)));
}

/**
 * The PostgreSQL engine's table of operations: one runner per operation of the catalogue
 * (`satisfies PgRunners`, so none can be missing), on the engine-neutral argument checks.
 */
import type { EngineOpName } from "../operation-catalogue.js";
import type { Page } from "../operations/page.js";
import type { PgQueryable } from "./pg-connection.js";
import { messageRunners } from "./pg-messages.js";
import type { PgRunners } from "./pg-operation.js";
import { searchRunners } from "./pg-search.js";
import { sessionRunners } from "./pg-sessions.js";
import { transferRunners } from "./pg-transfer.js";

const runners = { ...sessionRunners, ...messageRunners, ...searchRunners, ...transferRunners } satisfies PgRunners;

type AnyRunner = (db: PgQueryable, params: unknown, cursor: unknown) => Promise<unknown>;

/**
 * Runs one operation with parameters from `parseOperation`: a read or write gives
 * its result, a streamed one the page that starts at `cursor`.
 */
export function runPgOperation(db: PgQueryable, name: EngineOpName, params: unknown, cursor: unknown = null): Promise<unknown> {
  // Keyed by name, each runner's own parameter type is lost in the lookup; params came from that operation's parse.
  return (runners[name] as AnyRunner)(db, params, cursor);
}

export function runPgPage(db: PgQueryable, name: EngineOpName, params: unknown, cursor: unknown): Promise<Page<unknown, unknown>> {
  return runPgOperation(db, name, params, cursor) as Promise<Page<unknown, unknown>>;
}

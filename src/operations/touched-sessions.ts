/**
 * Which session a write changes, read off its checked parameters: what the daemon's writer
 * compares after each batch to tell its watchers what changed (sqlite/change-reader.ts, workers/writer-feed.ts). One
 * entry per write, so a new write cannot be left out; null: it may change any number of
 * sessions (every session is compared).
 */
import type { WriteOpName } from "../operation-catalogue.js";
import type { CheckedParams } from "./operation-params.js";

type Parsed<K extends WriteOpName> = CheckedParams<K>;

const TOUCHED: { [K in WriteOpName]: (params: Parsed<K>) => string | null } = {
  createSession: (p) => p.id,
  ensureSession: (p) => p.id,
  endSession: (p) => p.id,
  reopenSession: (p) => p.id,
  updateSystemPrompt: (p) => p.id,
  updateTokenCounts: (p) => p.params.id as string,
  setSessionTitle: (p) => p.id,
  appendMessage: (p) => p.sessionId,
  clearMessages: (p) => p.sessionId,
  popMessage: (p) => p.sessionId,
  importSession: (p) => p.session.id as string,
  deleteSession: (p) => p.id,
  pruneSessions: () => null,
};

/** The session a write of `op` with these parameters (from its parse) changes; null: any. */
export function touchedSession(op: WriteOpName, params: unknown): string | null {
  // Keyed by name, each entry's own parameter type is lost in the lookup; params came from that op's parse.
  return (TOUCHED[op] as (p: unknown) => string | null)(params);
}

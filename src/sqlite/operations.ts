/**
 * The engine's table of operations: how each operation of the catalogue runs on a connection, on
 * the arguments `parseOperation` (operations/operation-params.ts) checked. Direct mode, the writer and reader workers run operations through it;
 * its kinds are the catalogue's, checked by `satisfies`.
 */
import type { OPERATIONS, EngineOpName, ResultOf } from "../operation-catalogue.js";
import type { Connection } from "./connection.js";
import type { Page, ReadOperation, StreamOperation, WriteOperation } from "./define-operation.js";
import * as exporting from "./export.js";
import * as importing from "./import.js";
import * as listing from "./listing.js";
import * as messages from "./messages.js";
import * as search from "./search.js";
import * as sessions from "./sessions.js";
import * as sources from "./source-counts.js";
import * as titles from "./titles.js";

type Kind<K extends EngineOpName> = (typeof OPERATIONS)[K]["kind"];

/** The implementation an operation of the catalogue needs: its kind, and its result type. */
type OperationFor<K extends EngineOpName> = Kind<K> extends "stream"
  ? StreamOperation<unknown, unknown, ResultOf<K>>
  : Kind<K> extends "read"
    ? ReadOperation<unknown, ResultOf<K>>
    : WriteOperation<unknown, ResultOf<K>>;

export const operations = {
  createSession: sessions.createSession,
  ensureSession: sessions.ensureSession,
  endSession: sessions.endSession,
  reopenSession: sessions.reopenSession,
  updateSystemPrompt: sessions.updateSystemPrompt,
  updateTokenCounts: sessions.updateTokenCounts,
  getSession: sessions.getSession,
  resolveSessionId: sessions.resolveSessionId,
  sessionIdsByPrefix: sessions.sessionIdsByPrefix,
  setSessionTitle: titles.setSessionTitle,
  getSessionTitle: titles.getSessionTitle,
  getSessionByTitle: titles.getSessionByTitle,
  resolveSessionByTitle: titles.resolveSessionByTitle,
  getNextTitleInLineage: titles.getNextTitleInLineage,
  getCompressionTip: listing.getCompressionTip,
  listSessionsRich: listing.listSessionsRich,
  appendMessage: messages.appendMessage,
  getMessages: messages.getMessages,
  getMessagesAsConversation: messages.getMessagesAsConversation,
  clearMessages: messages.clearMessages,
  popMessage: messages.popMessage,
  searchMessages: search.searchMessages,
  searchSessions: sessions.searchSessions,
  sessionCount: sessions.sessionCount,
  messageCount: messages.messageCount,
  sourceCounts: sources.sourceCounts,
  exportSession: exporting.exportSession,
  exportAll: exporting.exportAll,
  importSession: importing.importSession,
  deleteSession: sessions.deleteSession,
  pruneSessions: sessions.pruneSessions,
} satisfies { [K in EngineOpName]: OperationFor<K> & { op: K } };

/**
 * Runs one operation on a connection with parameters from `parseOperation`: a read or write
 * gives its result, a streamed one the page that starts at `cursor`.
 */
export function runOperation(db: Connection, name: EngineOpName, params: unknown, cursor: unknown = null): unknown {
  // The table is keyed by name, so each entry's own parameter type is lost in the lookup; params
  // came from that same entry's parse.
  const op = operations[name] as ReadOperation<unknown, unknown> | WriteOperation<unknown, unknown> | StreamOperation<unknown, unknown, unknown>;
  return op.kind === "stream" ? op.page(db, params, cursor) : op.run(db, params);
}

/** `runOperation` for a streamed operation. */
export function runPage(db: Connection, name: EngineOpName, params: unknown, cursor: unknown): Page<unknown, unknown> {
  return runOperation(db, name, params, cursor) as Page<unknown, unknown>;
}

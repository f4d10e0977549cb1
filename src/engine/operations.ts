/**
 * The table of operations: every method of `SessionDB` (but `close`), whether it reads, writes
 * or streams, how its arguments are checked and how it runs. Direct mode, the daemon's dispatch,
 * the writer and reader workers and the client's proxy all derive from this one table, so an
 * operation cannot be half-wired.
 */
import type { SessionDB } from "../session-db.js";
import type { ReadOperation, StreamOperation, WriteOperation } from "./operation.js";
import * as exporting from "./export.js";
import * as importing from "./import.js";
import * as listing from "./listing.js";
import * as messages from "./messages.js";
import * as search from "./search.js";
import * as sessions from "./sessions.js";
import * as sources from "./source-counts.js";
import * as titles from "./titles.js";

/** The names of the operations: the methods of `SessionDB` but `mode` and `close`. */
export type OpName = Exclude<keyof SessionDB, "mode" | "close">;

type ResultOf<K extends OpName> = SessionDB[K] extends (...args: never[]) => AsyncIterable<infer T>
  ? T
  : Awaited<ReturnType<SessionDB[K]>>;

type OperationFor<K extends OpName> = K extends "exportAll"
  ? StreamOperation<any, any, ResultOf<K>> // eslint-disable-line @typescript-eslint/no-explicit-any
  : // eslint-disable-next-line @typescript-eslint/no-explicit-any
    ReadOperation<any, ResultOf<K>> | WriteOperation<any, ResultOf<K>>;

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
} satisfies { [K in OpName]: OperationFor<K> };

export const OP_NAMES = Object.keys(operations) as OpName[];

export function isOpName(name: unknown): name is OpName {
  return typeof name === "string" && Object.prototype.hasOwnProperty.call(operations, name);
}

/** The operations that change the file, run by the writer (or direct mode's write retry). */
export type WriteOpName = { [K in OpName]: (typeof operations)[K]["kind"] extends "write" ? K : never }[OpName];
export type ReadOpName = { [K in OpName]: (typeof operations)[K]["kind"] extends "read" ? K : never }[OpName];

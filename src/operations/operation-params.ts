/**
 * How every operation of the catalogue checks its arguments, outside any transaction and the
 * same on every engine (this is also where JSON is serialized and titles are cleaned), so both
 * engines refuse the same input with the same error. An engine's implementation of an operation
 * takes what its parser gives (`CheckedParams`).
 */
import { OPERATIONS, type EngineOpName } from "../operation-catalogue.js";
import { arity, type Args } from "./args.js";
import { parseImportSession } from "./import-params.js";
import { parseListSessionsRich } from "./listing-params.js";
import { parseAppendMessage, parseMessageCount, parseMessagesOf } from "./message-params.js";
import { parseSearchMessages } from "./search-params.js";
import {
  parseCreateSession, parseEndSession, parseEnsureSession, parsePruneSessions, parseResolveSessionId, parseSearchSessions,
  parseSessionId, parseSessionIdsByPrefix, parseSourceFilter, parseUpdateSystemPrompt, parseUpdateTokenCounts,
} from "./session-params.js";
import { parseBaseTitle, parseSetSessionTitle, parseTitle } from "./title-params.js";

/**
 * Checks an operation's arguments. They come as an array no longer than the operation takes
 * (checked by `parseOperation`); `op` is the name the operation is registered under, for messages
 * that name it.
 */
export type Parser<P> = (args: Args, op: EngineOpName) => P;

const OPERATION_PARSERS = {
  createSession: parseCreateSession,
  ensureSession: parseEnsureSession,
  endSession: parseEndSession,
  reopenSession: parseSessionId,
  updateSystemPrompt: parseUpdateSystemPrompt,
  updateTokenCounts: parseUpdateTokenCounts,
  getSession: parseSessionId,
  resolveSessionId: parseResolveSessionId,
  sessionIdsByPrefix: parseSessionIdsByPrefix,
  setSessionTitle: parseSetSessionTitle,
  getSessionTitle: parseSessionId,
  getSessionByTitle: parseTitle,
  resolveSessionByTitle: parseTitle,
  getNextTitleInLineage: parseBaseTitle,
  getCompressionTip: parseSessionId,
  listSessionsRich: parseListSessionsRich,
  appendMessage: parseAppendMessage,
  getMessages: parseMessagesOf,
  getMessagesAsConversation: parseMessagesOf,
  clearMessages: parseMessagesOf,
  popMessage: parseMessagesOf,
  searchMessages: parseSearchMessages,
  searchSessions: parseSearchSessions,
  sessionCount: parseSourceFilter,
  messageCount: parseMessageCount,
  sourceCounts: () => ({}),
  exportSession: parseSessionId,
  exportAll: parseSourceFilter,
  importSession: parseImportSession,
  deleteSession: parseSessionId,
  pruneSessions: parsePruneSessions,
} satisfies { [K in EngineOpName]: Parser<unknown> };

/** An operation's checked arguments, as its parser gives them to an engine. */
export type CheckedParams<K extends EngineOpName> = ReturnType<(typeof OPERATION_PARSERS)[K]>;

/**
 * An operation's arguments, checked outside any transaction, as an engine's implementation takes
 * them. The name the operation is registered under is the one its errors give: its parser is not
 * told it twice.
 */
export function parseOperation(name: EngineOpName, args: Args): unknown {
  arity(args, OPERATIONS[name].maxArgs, name);
  return (OPERATION_PARSERS[name] as Parser<unknown>)(args, name);
}

/**
 * The catalogue of operations: every method of `SessionDB` (but `mode` and `close`), whether it
 * reads, writes or streams, and its parameters and result, taken from the interface. No SQL and
 * no driver: the wire protocol, the client, the daemon's dispatch and the CLI import this, and
 * the engine's table of implementations (`sqlite/operations.ts`) must satisfy it, so an
 * operation cannot be half-wired.
 */
import type { SessionDB, WriteOptions } from "./session-db.js";

/** The names of the operations: the methods of `SessionDB` but `close` (and not its properties). */
export type OpName = Exclude<keyof SessionDB, "mode" | "engine" | "files" | "daemon" | "close">;

export type OpKind = "read" | "write" | "stream";

/** The arguments of an operation, as its method takes them. */
export type ParamsOf<K extends OpName> = Parameters<SessionDB[K]>;

/** What an operation yields: the promised value, or for a streamed one each item. */
export type ResultOf<K extends OpName> = SessionDB[K] extends (...args: never[]) => AsyncIterable<infer T>
  ? T
  : Awaited<ReturnType<SessionDB[K]>>;

export const OPERATION_KINDS = {
  createSession: "write",
  ensureSession: "write",
  endSession: "write",
  reopenSession: "write",
  updateSystemPrompt: "write",
  updateTokenCounts: "write",
  getSession: "read",
  resolveSessionId: "read",
  sessionIdsByPrefix: "read",
  setSessionTitle: "write",
  getSessionTitle: "read",
  getSessionByTitle: "read",
  resolveSessionByTitle: "read",
  getNextTitleInLineage: "read",
  getCompressionTip: "read",
  listSessionsRich: "read",
  appendMessage: "write",
  getMessages: "read",
  getMessagesAsConversation: "read",
  clearMessages: "write",
  popMessage: "write",
  searchMessages: "read",
  searchSessions: "read",
  sessionCount: "read",
  messageCount: "read",
  sourceCounts: "read",
  exportSession: "read",
  exportAll: "stream",
  importSession: "write",
  deleteSession: "write",
  pruneSessions: "write",
} as const satisfies { [K in OpName]: SessionDB[K] extends (...args: never[]) => AsyncIterable<unknown> ? "stream" : "read" | "write" };

/**
 * A write's parameters but its last, the `WriteOptions` every write takes (never `never`: a write
 * without it fails to compile). The key travels beside the arguments, never among them.
 */
type WithoutWriteOptions<P> = P extends [...infer Head, WriteOptions] ? Head : never;
type EngineParams<K extends OpName> = K extends WriteOpName ? WithoutWriteOptions<Required<ParamsOf<K>>> : Required<ParamsOf<K>>;

/**
 * How many arguments each operation takes at most: its method's parameters, optional ones
 * included, as the compiler reads them off `SessionDB` (a write's `WriteOptions` left out). A
 * call with more is INVALID_ARGUMENT.
 */
export const PARAMETER_COUNTS = {
  createSession: 3,
  ensureSession: 3,
  endSession: 2,
  reopenSession: 1,
  updateSystemPrompt: 2,
  updateTokenCounts: 3,
  getSession: 1,
  resolveSessionId: 1,
  sessionIdsByPrefix: 2,
  setSessionTitle: 2,
  getSessionTitle: 1,
  getSessionByTitle: 1,
  resolveSessionByTitle: 1,
  getNextTitleInLineage: 1,
  getCompressionTip: 1,
  listSessionsRich: 1,
  appendMessage: 2,
  getMessages: 1,
  getMessagesAsConversation: 1,
  clearMessages: 1,
  popMessage: 1,
  searchMessages: 2,
  searchSessions: 1,
  sessionCount: 1,
  messageCount: 1,
  sourceCounts: 0,
  exportSession: 1,
  exportAll: 1,
  importSession: 2,
  deleteSession: 1,
  pruneSessions: 1,
} as const satisfies { [K in OpName]: EngineParams<K>["length"] };

export const OP_NAMES = Object.keys(OPERATION_KINDS) as OpName[];

export function isOpName(name: unknown): name is OpName {
  return typeof name === "string" && Object.prototype.hasOwnProperty.call(OPERATION_KINDS, name);
}

/** Whether `name` is an operation that changes the file (false for control ops and unknown names). */
export function isWriteOp(name: string): name is WriteOpName {
  return isOpName(name) && OPERATION_KINDS[name] === "write";
}

type OfKind<Kind extends OpKind> = { [K in OpName]: (typeof OPERATION_KINDS)[K] extends Kind ? K : never }[OpName];
/** The operations that change the file, run by the writer (or direct mode's write retry). */
export type WriteOpName = OfKind<"write">;
export type ReadOpName = OfKind<"read">;
/** Operations answered with a promise (all but the streamed ones). */
export type CallOpName = Exclude<OpName, StreamOpName>;
export type StreamOpName = OfKind<"stream">;

/**
 * Whether a write can delete messages. The daemon's writer sweeps the CJK search index after
 * one (sqlite/cjk-index.ts): deleted messages leave stale entries there. Every write operation
 * says, so a new one cannot be left out.
 */
const DELETES_MESSAGES = {
  createSession: false,
  ensureSession: false,
  endSession: false,
  reopenSession: false,
  updateSystemPrompt: false,
  updateTokenCounts: false,
  setSessionTitle: false,
  appendMessage: false,
  clearMessages: true,
  popMessage: true,
  importSession: false,
  deleteSession: true,
  pruneSessions: true,
} as const satisfies { [K in WriteOpName]: boolean };

export function deletesMessages(op: WriteOpName): boolean {
  return DELETES_MESSAGES[op];
}

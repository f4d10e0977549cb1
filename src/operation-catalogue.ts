/**
 * The catalogue of operations: every method of `SessionDB` (but `mode` and `close`), whether it
 * reads, writes or streams, its parameters and result, taken from the interface, and the facts
 * the daemon and the client act on (`OperationFacts`); docs/protocol.json is generated from it
 * for clients in other languages. No SQL and
 * no driver: the wire protocol, the client, the daemon's dispatch and the CLI import this, and
 * the argument checks (`operations/operation-params.ts`) and each engine's table of
 * implementations (`sqlite/operations.ts`, `pg/pg-operations.ts`) must satisfy it, so an
 * operation cannot be half-wired.
 */
import type { SessionDB, WriteOptions } from "./session-db.js";

/** The names of the operations: the methods of `SessionDB` but `close` (and not its properties). */
export type OpName = Exclude<keyof SessionDB, "mode" | "engine" | "files" | "daemon" | "close">;

/**
 * `watch`: a subscription (issue 26), answered by chunks of events for as long as it lives and
 * ended by the wire op `unwatch` (see WIRE_ONLY_OPS).
 */
export type OpKind = "read" | "write" | "stream" | "watch";

/** The arguments of an operation, as its method takes them. */
export type ParamsOf<K extends OpName> = Parameters<SessionDB[K]>;

/** What an operation yields: the promised value, or for a streamed one each item. */
export type ResultOf<K extends OpName> = SessionDB[K] extends (...args: never[]) => AsyncIterable<infer T>
  ? T
  : Awaited<ReturnType<SessionDB[K]>>;

/**
 * What the catalogue says of each operation. Every entry says all of it, so a new operation
 * cannot leave a fact out.
 */
export interface OperationFacts {
  /** `read`, `write` (changes the file: run by the writer, or direct mode's write retry), or `stream` (a read answered in pages). */
  readonly kind: OpKind;
  /**
   * How many arguments it takes at most: its method's parameters, optional ones included, as the
   * compiler reads them off `SessionDB` (a write's `WriteOptions` left out: the key travels beside
   * the arguments, never among them). A call with more is INVALID_ARGUMENT.
   */
  readonly maxArgs: number;
  /**
   * A read whose cost grows with the data (full-text searches, rich listings, exports): the
   * daemon runs these on at most `threads` reader threads, so the one beyond is always there for
   * the point reads (daemon/reader-pool.ts).
   */
  readonly slow: boolean;
  /**
   * A write that can delete messages: the daemon's writer sweeps the CJK search index after one
   * (sqlite/cjk-index.ts), since deleted messages leave stale entries there.
   */
  readonly deletesMessages: boolean;
  /**
   * The fields of its arguments direct mode serializes with JSON.stringify (optJson in
   * operations/args.ts: createSession's opts.modelConfig, appendMessage's msg, importSession's
   * messages' tool_calls): the daemon client sends them as JSON data (client/wire-args.ts).
   */
  readonly jsonFields: readonly string[];
}

/**
 * A write's parameters but its last, the `WriteOptions` every write takes (never `never`: a write
 * without it fails to compile). The key travels beside the arguments, never among them.
 */
type WithoutWriteOptions<P> = P extends [...infer Head, WriteOptions] ? Head : never;
type MaxArgs<K extends OpName, Kind> = (Kind extends "write" ? WithoutWriteOptions<Required<ParamsOf<K>>> : Required<ParamsOf<K>>)["length"];
type KindOf<K extends OpName> = SessionDB[K] extends (...args: never[]) => AsyncIterable<unknown> ? "stream" | "watch" : "read" | "write";
/** An entry the compiler checked against the method: its kind (streamed or not) and its argument count. */
type CheckedFacts<K extends OpName, Facts> = Facts extends { readonly kind: infer Kind }
  ? OperationFacts & { readonly kind: Kind & KindOf<K>; readonly maxArgs: MaxArgs<K, Kind> }
  : never;

function checked<const T extends { readonly [K in OpName]: CheckedFacts<K, T[K]> }>(table: T): T {
  return table;
}

/** The operations, each with its facts: the one table the daemon, the client, the CLI and the engines read. */
export const OPERATIONS = checked({
  createSession: { kind: "write", maxArgs: 3, slow: false, deletesMessages: false, jsonFields: ["modelConfig"] },
  ensureSession: { kind: "write", maxArgs: 3, slow: false, deletesMessages: false, jsonFields: [] },
  endSession: { kind: "write", maxArgs: 2, slow: false, deletesMessages: false, jsonFields: [] },
  reopenSession: { kind: "write", maxArgs: 1, slow: false, deletesMessages: false, jsonFields: [] },
  updateSystemPrompt: { kind: "write", maxArgs: 2, slow: false, deletesMessages: false, jsonFields: [] },
  updateTokenCounts: { kind: "write", maxArgs: 3, slow: false, deletesMessages: false, jsonFields: [] },
  getSession: { kind: "read", maxArgs: 1, slow: false, deletesMessages: false, jsonFields: [] },
  resolveSessionId: { kind: "read", maxArgs: 1, slow: false, deletesMessages: false, jsonFields: [] },
  sessionIdsByPrefix: { kind: "read", maxArgs: 2, slow: false, deletesMessages: false, jsonFields: [] },
  setSessionTitle: { kind: "write", maxArgs: 2, slow: false, deletesMessages: false, jsonFields: [] },
  getSessionTitle: { kind: "read", maxArgs: 1, slow: false, deletesMessages: false, jsonFields: [] },
  getSessionByTitle: { kind: "read", maxArgs: 1, slow: false, deletesMessages: false, jsonFields: [] },
  resolveSessionByTitle: { kind: "read", maxArgs: 1, slow: false, deletesMessages: false, jsonFields: [] },
  getNextTitleInLineage: { kind: "read", maxArgs: 1, slow: false, deletesMessages: false, jsonFields: [] },
  getCompressionTip: { kind: "read", maxArgs: 1, slow: false, deletesMessages: false, jsonFields: [] },
  listSessionsRich: { kind: "read", maxArgs: 1, slow: true, deletesMessages: false, jsonFields: [] },
  appendMessage: { kind: "write", maxArgs: 2, slow: false, deletesMessages: false, jsonFields: ["toolCalls", "reasoningDetails", "codexReasoningItems"] },
  getMessages: { kind: "read", maxArgs: 1, slow: false, deletesMessages: false, jsonFields: [] },
  getMessagesAsConversation: { kind: "read", maxArgs: 1, slow: false, deletesMessages: false, jsonFields: [] },
  clearMessages: { kind: "write", maxArgs: 1, slow: false, deletesMessages: true, jsonFields: [] },
  popMessage: { kind: "write", maxArgs: 1, slow: false, deletesMessages: true, jsonFields: [] },
  searchMessages: { kind: "read", maxArgs: 2, slow: true, deletesMessages: false, jsonFields: [] },
  searchSessions: { kind: "read", maxArgs: 1, slow: true, deletesMessages: false, jsonFields: [] },
  sessionCount: { kind: "read", maxArgs: 1, slow: false, deletesMessages: false, jsonFields: [] },
  messageCount: { kind: "read", maxArgs: 1, slow: false, deletesMessages: false, jsonFields: [] },
  sourceCounts: { kind: "read", maxArgs: 0, slow: false, deletesMessages: false, jsonFields: [] },
  exportSession: { kind: "read", maxArgs: 1, slow: true, deletesMessages: false, jsonFields: [] },
  exportAll: { kind: "stream", maxArgs: 1, slow: true, deletesMessages: false, jsonFields: [] },
  importSession: { kind: "write", maxArgs: 2, slow: false, deletesMessages: false, jsonFields: ["tool_calls"] },
  deleteSession: { kind: "write", maxArgs: 1, slow: false, deletesMessages: true, jsonFields: [] },
  pruneSessions: { kind: "write", maxArgs: 1, slow: false, deletesMessages: true, jsonFields: [] },
  watch: { kind: "watch", maxArgs: 1, slow: false, deletesMessages: false, jsonFields: [] },
});

/**
 * Ops of the wire that are no method of `SessionDB`: `unwatch` (its argument: the id of a
 * `watch` request on the same connection) ends that subscription.
 */
export const WIRE_ONLY_OPS = { unwatch: { kind: "watch", maxArgs: 1 } } as const satisfies Record<string, Pick<OperationFacts, "kind" | "maxArgs">>;

/** Every op a request may name but the control ops: the catalogue's and the wire's own. */
export type WireOpName = OpName | keyof typeof WIRE_ONLY_OPS;

/** Every op of the catalogue and of the wire (control ops aside): what the docs and the metrics list. */
export const OP_NAMES = [...Object.keys(OPERATIONS), ...Object.keys(WIRE_ONLY_OPS)] as WireOpName[];

export function isOpName(name: unknown): name is OpName {
  return typeof name === "string" && Object.prototype.hasOwnProperty.call(OPERATIONS, name);
}

export function isWireOp(name: unknown): name is WireOpName {
  return isOpName(name) || (typeof name === "string" && Object.prototype.hasOwnProperty.call(WIRE_ONLY_OPS, name));
}

/** Whether `name` is an operation that changes the file (false for control ops and unknown names). */
export function isWriteOp(name: string): name is WriteOpName {
  return isOpName(name) && OPERATIONS[name].kind === "write";
}

type OfKind<Kind extends OpKind> = { [K in OpName]: (typeof OPERATIONS)[K]["kind"] extends Kind ? K : never }[OpName];
/** The operations that change the file, run by the writer (or direct mode's write retry). */
export type WriteOpName = OfKind<"write">;
export type ReadOpName = OfKind<"read">;
/** Operations answered with a promise (all but the streamed ones and `watch`). */
export type CallOpName = Exclude<OpName, StreamOpName | WatchOpName>;
export type StreamOpName = OfKind<"stream">;
export type WatchOpName = OfKind<"watch">;
/** The operations the engines implement (sqlite/operations.ts): all but `watch`, which each mode's feed serves. */
export type EngineOpName = Exclude<OpName, WatchOpName>;

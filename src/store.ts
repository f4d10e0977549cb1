import type { CallOpName, ParamsOf, ResultOf, StreamOpName } from "./operation-catalogue.js";
import type { DatabaseFiles } from "./database-files.js";
import type { DaemonControl } from "./protocol/control.js";
import type { Engine, Mode, SessionDB } from "./session-db.js";

type Call<K extends CallOpName> = Promise<ResultOf<K>>;

/**
 * Every method of `SessionDB`, written once: each is one line that names its operation and hands
 * its arguments to the transport's `call` (or `stream`). Direct mode, the daemon client and auto
 * mode (over SQLite or PostgreSQL) differ only in those two, so a method can be followed from here to its transport.
 */
export abstract class Store implements SessionDB {
  abstract readonly mode: Mode;
  abstract readonly engine: Engine;
  abstract readonly daemon: DaemonControl | null;
  readonly files: DatabaseFiles;
  /** Runs one operation (all but the streamed ones) by name. */
  protected abstract call<K extends CallOpName>(name: K, args: ParamsOf<K>): Call<K>;
  /** Runs a streamed operation, item by item. */
  protected abstract stream<K extends StreamOpName>(name: K, args: ParamsOf<K>): AsyncIterable<ResultOf<K>>;
  abstract close(): Promise<void>;

  protected constructor(files: DatabaseFiles) {
    this.files = files;
  }

  /** `call` on another store: how auto mode hands an operation to the store that serves it. */
  protected static callOn<K extends CallOpName>(store: Store, name: K, args: ParamsOf<K>): Call<K> {
    return store.call(name, args);
  }

  protected static streamOn<K extends StreamOpName>(store: Store, name: K, args: ParamsOf<K>): AsyncIterable<ResultOf<K>> {
    return store.stream(name, args);
  }

  createSession(...a: ParamsOf<"createSession">) { return this.call("createSession", a); }
  ensureSession(...a: ParamsOf<"ensureSession">) { return this.call("ensureSession", a); }
  endSession(...a: ParamsOf<"endSession">) { return this.call("endSession", a); }
  reopenSession(...a: ParamsOf<"reopenSession">) { return this.call("reopenSession", a); }
  updateSystemPrompt(...a: ParamsOf<"updateSystemPrompt">) { return this.call("updateSystemPrompt", a); }
  updateTokenCounts(...a: ParamsOf<"updateTokenCounts">) { return this.call("updateTokenCounts", a); }
  getSession(...a: ParamsOf<"getSession">) { return this.call("getSession", a); }
  resolveSessionId(...a: ParamsOf<"resolveSessionId">) { return this.call("resolveSessionId", a); }
  sessionIdsByPrefix(...a: ParamsOf<"sessionIdsByPrefix">) { return this.call("sessionIdsByPrefix", a); }
  setSessionTitle(...a: ParamsOf<"setSessionTitle">) { return this.call("setSessionTitle", a); }
  getSessionTitle(...a: ParamsOf<"getSessionTitle">) { return this.call("getSessionTitle", a); }
  getSessionByTitle(...a: ParamsOf<"getSessionByTitle">) { return this.call("getSessionByTitle", a); }
  resolveSessionByTitle(...a: ParamsOf<"resolveSessionByTitle">) { return this.call("resolveSessionByTitle", a); }
  getNextTitleInLineage(...a: ParamsOf<"getNextTitleInLineage">) { return this.call("getNextTitleInLineage", a); }
  getCompressionTip(...a: ParamsOf<"getCompressionTip">) { return this.call("getCompressionTip", a); }
  listSessionsRich(...a: ParamsOf<"listSessionsRich">) { return this.call("listSessionsRich", a); }
  appendMessage(...a: ParamsOf<"appendMessage">) { return this.call("appendMessage", a); }
  getMessages(...a: ParamsOf<"getMessages">) { return this.call("getMessages", a); }
  getMessagesAsConversation(...a: ParamsOf<"getMessagesAsConversation">) { return this.call("getMessagesAsConversation", a); }
  clearMessages(...a: ParamsOf<"clearMessages">) { return this.call("clearMessages", a); }
  popMessage(...a: ParamsOf<"popMessage">) { return this.call("popMessage", a); }
  searchMessages(...a: ParamsOf<"searchMessages">) { return this.call("searchMessages", a); }
  searchSessions(...a: ParamsOf<"searchSessions">) { return this.call("searchSessions", a); }
  sessionCount(...a: ParamsOf<"sessionCount">) { return this.call("sessionCount", a); }
  messageCount(...a: ParamsOf<"messageCount">) { return this.call("messageCount", a); }
  sourceCounts(...a: ParamsOf<"sourceCounts">) { return this.call("sourceCounts", a); }
  exportSession(...a: ParamsOf<"exportSession">) { return this.call("exportSession", a); }
  exportAll(...a: ParamsOf<"exportAll">) { return this.stream("exportAll", a); }
  importSession(...a: ParamsOf<"importSession">) { return this.call("importSession", a); }
  deleteSession(...a: ParamsOf<"deleteSession">) { return this.call("deleteSession", a); }
  pruneSessions(...a: ParamsOf<"pruneSessions">) { return this.call("pruneSessions", a); }
}

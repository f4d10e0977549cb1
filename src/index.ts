/** sessiondb: the session and message store of an AI agent. */
export { openSessionDB } from "./open.js";
export { SessionDBError, SpooledError, ERROR_CODES, type ErrorCode } from "./errors.js";
export { UntrustedSocketError } from "./client/socket-trust.js";
export type {
  SessionDB, SessionRow, MessageRow, SessionExport, RichSessionRow, ConversationMessage, ContextMessage,
  SearchHit, CreateSessionOptions, TokenUsage, TokenUpdateOptions, NewMessage, ListSessionsOptions,
  SearchOptions, SearchSessionsOptions, ExportOptions, PruneOptions, OpenOptions, RetryOptions, SpoolOptions, Mode, Engine,
  ImportOptions, ImportResult, SourceCount, WriteOptions, WatchEvent, WatchOptions, SessionChange,
} from "./session-db.js";
export { sanitizeTitle, MAX_TITLE_LENGTH } from "./operations/title-sanitizer.js";
export { sanitizeFtsQuery, containsCjk } from "./operations/fts-query.js";
export { SCHEMA_VERSION } from "./sqlite/schema-version.js";
export { MAX_TEXT_BYTES, MAX_NAME_LENGTH, MAX_FILTER_ENTRIES, MAX_LIMIT } from "./operations/args.js";
export { saveTrajectory, convertScratchpadToThink, hasIncompleteScratchpad } from "./trajectory.js";
export { defaultDatabasePath, defaultSocketPath } from "./engine-kind.js";

/**
 * The coded error tree. Codes are a public contract: the same code crosses the socket, so
 * direct and daemon modes reject with the same thing.
 */

export const ERROR_CODES = [
  "INVALID_ARGUMENT",
  "TITLE_TOO_LONG",
  "TITLE_IN_USE",
  "CONSTRAINT",
  "BUSY",
  "OVERLOADED",
  "TIMEOUT",
  "OUTCOME_UNKNOWN",
  "IDEMPOTENCY_CONFLICT",
  "SPOOLED",
  "UNAVAILABLE",
  "NOT_FOUND",
  "CLOSED",
  "PROTOCOL",
  "FRAME_TOO_LARGE",
  "SCHEMA",
  "CORRUPT",
  "IO",
  "PERMISSION",
  "INTERNAL",
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

const KNOWN_CODES: ReadonlySet<string> = new Set(ERROR_CODES);

export class SessionDBError extends Error {
  override readonly name = "SessionDBError";
  readonly code: ErrorCode;

  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }
}

/**
 * A write that could not be applied before its deadline (the store unreachable, or locked past
 * the budget) and is now durable in the spool (`openSessionDB({ spool })`, docs/spool.md): it
 * will be applied exactly once, in the caller's order. Code `SPOOLED`.
 */
export class SpooledError extends SessionDBError {
  /** The write's idempotency key, the one it will be applied under. */
  readonly idempotencyKey: string;
  /** The spool file that holds it. */
  readonly spoolPath: string;

  constructor(message: string, idempotencyKey: string, spoolPath: string, options?: { cause?: unknown }) {
    super("SPOOLED", message, options);
    this.idempotencyKey = idempotencyKey;
    this.spoolPath = spoolPath;
  }
}

/** The error as it travels in a response frame. */
export interface WireError {
  code: ErrorCode;
  message: string;
}

export function toWireError(err: unknown): WireError {
  const e = toSessionDBError(err);
  return { code: e.code, message: e.message };
}

/**
 * A wire error as a `SessionDBError`. A code this side does not know (a newer daemon's) becomes
 * `INTERNAL`, the code it came with kept in the message; the Python client does the same.
 */
export function fromWireError(wire: unknown): SessionDBError {
  const w = (wire ?? {}) as Partial<Record<"code" | "message", unknown>>;
  const message = typeof w.message === "string" ? w.message : "unknown error from the daemon";
  if (typeof w.code === "string" && KNOWN_CODES.has(w.code)) return new SessionDBError(w.code as ErrorCode, message);
  return new SessionDBError("INTERNAL", w.code === undefined ? message : `${message} (code ${JSON.stringify(w.code)}, unknown to this client)`);
}

/** The code SQLite (`SQLITE_BUSY_SNAPSHOT`…) or Node (`ENOSPC`…) gave an error; "" when none. */
export function errorCode(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : "";
}

/** True for SQLite's "the lock is taken" answers, the only ones a write retries. */
export function isBusyError(err: unknown): boolean {
  const code = errorCode(err);
  if (code.startsWith("SQLITE_BUSY") || code.startsWith("SQLITE_LOCKED")) return true;
  const message = err instanceof Error ? err.message.toLowerCase() : "";
  return message.includes("database is locked") || message.includes("database table is locked");
}

/**
 * The one place where SQLite's and Node's errors become `SessionDBError`s. An error that already
 * is one passes through unchanged.
 */
export function toSessionDBError(err: unknown): SessionDBError {
  if (err instanceof SessionDBError) return err;
  const message = err instanceof Error ? err.message : String(err);
  const code = errorCode(err);
  if (code !== "") {
    if (code.startsWith("SQLITE_CONSTRAINT")) return new SessionDBError("CONSTRAINT", message, { cause: err });
    if (isBusyError(err)) return new SessionDBError("BUSY", message, { cause: err });
    if (code.startsWith("SQLITE_CORRUPT") || code.startsWith("SQLITE_NOTADB")) {
      return new SessionDBError("CORRUPT", `the database file is damaged: ${message}`, { cause: err });
    }
    if (code.startsWith("SQLITE_FULL")) {
      return new SessionDBError("IO", `the disk is full: ${message}`, { cause: err });
    }
    if (
      code.startsWith("SQLITE_IOERR") ||
      code.startsWith("SQLITE_CANTOPEN") ||
      code.startsWith("SQLITE_READONLY") ||
      code.startsWith("SQLITE_PERM") ||
      code === "ENOSPC" ||
      code === "EACCES" ||
      code === "EROFS"
    ) {
      return new SessionDBError("IO", message, { cause: err });
    }
  }
  return new SessionDBError("INTERNAL", message, { cause: err });
}

export function invalidArgument(message: string): SessionDBError {
  return new SessionDBError("INVALID_ARGUMENT", message);
}

/** PostgreSQL's errors as `SessionDBError`s, mapped here once (SQLSTATE classes, then Node's). */
import { SessionDBError, toSessionDBError } from "../errors.js";

function sqlState(err: unknown): string | undefined {
  // Node's system errors carry a code too, and EPIPE has five capitals like a SQLSTATE; theirs come with the failed syscall.
  if (typeof (err as { syscall?: unknown } | null)?.syscall === "string") return undefined;
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === "string" && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
}

/** Serialization failure and deadlock: the transaction did nothing and may simply run again. */
export function isRetryablePgError(err: unknown): boolean {
  const state = sqlState(err);
  return state === "40001" || state === "40P01";
}

/** The connection went away (server restart, network): nothing of an open transaction was committed. */
export function isConnectionError(err: unknown): boolean {
  const state = sqlState(err);
  // 57P01–57P05: shut down, crashed, starting, database dropped, idle-session timeout; 25P03: the
  // server ended a connection idle in its transaction. Each ends the connection, and rolls back.
  if (state !== undefined) return state.startsWith("08") || /^57P0[1-5]$/.test(state) || state === "25P03";
  const code = (err as { code?: unknown } | null)?.code;
  const message = err instanceof Error ? err.message : "";
  return (
    code === "ECONNREFUSED" || code === "ECONNRESET" || code === "ENOENT" || code === "EPIPE" || code === "ETIMEDOUT" ||
    /Connection terminated|connection timeout|Client has encountered a connection error/i.test(message)
  );
}

/** A connection lost inside a transaction, before its COMMIT was sent: nothing of it was applied. */
export function lostBeforeCommit(err: unknown): SessionDBError {
  const message = err instanceof Error ? err.message : String(err);
  return new SessionDBError("UNAVAILABLE", `the connection to PostgreSQL was lost (${message}); this write was not applied`, { cause: err });
}

/** A connection lost while its COMMIT was in flight: the transaction may or may not have committed. */
export function lostDuringCommit(err: unknown): SessionDBError {
  return new SessionDBError(
    "OUTCOME_UNKNOWN",
    "the connection to PostgreSQL was lost while committing; this write may or may not have been applied: read before retrying",
    { cause: err },
  );
}

export function toPgSessionDBError(err: unknown): SessionDBError {
  if (err instanceof SessionDBError) return err;
  const message = err instanceof Error ? err.message : String(err);
  const state = sqlState(err);
  if (isConnectionError(err)) return new SessionDBError("UNAVAILABLE", `PostgreSQL is unreachable: ${message}`, { cause: err });
  if (state === undefined) return toSessionDBError(err);
  const cls = state.slice(0, 2);
  if (cls === "23") return new SessionDBError("CONSTRAINT", message, { cause: err });
  if (state === "22021" || state === "22P05") {
    return new SessionDBError("INVALID_ARGUMENT", `PostgreSQL cannot store this text (U+0000 is not allowed): ${message}`, { cause: err });
  }
  if (cls === "22") return new SessionDBError("INVALID_ARGUMENT", message, { cause: err });
  if (cls === "40" || state === "55P03" || state === "57014") return new SessionDBError("BUSY", message, { cause: err });
  if (cls === "53") return new SessionDBError("IO", `PostgreSQL is out of resources: ${message}`, { cause: err });
  if (cls === "28" || cls === "3D" || state === "42501") return new SessionDBError("IO", `PostgreSQL refused: ${message}`, { cause: err });
  if (cls === "08" || cls === "57") return new SessionDBError("UNAVAILABLE", `PostgreSQL is unreachable: ${message}`, { cause: err });
  if (cls === "XX") return new SessionDBError("CORRUPT", message, { cause: err });
  return new SessionDBError("INTERNAL", message, { cause: err });
}

/** The refusal of a write to a database whose schema is newer than this sessiondb's. */
export function readOnly(): SessionDBError {
  return new SessionDBError("SCHEMA", "this PostgreSQL database was written by a newer sessiondb; it is open read-only");
}

/**
 * What a path holds, found without changing a byte of it (SPEC §1, §8): sessiondb initialises
 * only a missing or empty file, migrates only a file holding the schema's tables, and only reads
 * a file a newer Hermes made. Anything else is another program's file and is refused.
 */
import { closeSync, openSync, readSync, statSync } from "node:fs";
import { SessionDBError } from "../errors.js";
import { openConnection } from "./connection.js";
import { readVersion, SCHEMA_VERSION, tableExists } from "./schema.js";

export type DatabaseFile =
  | { readonly kind: "missing" }
  | { readonly kind: "empty" }
  /** Holds `sessions` and `messages`; `version` is null when it has no version row. */
  | { readonly kind: "hermes"; readonly version: number | null };

const SQLITE_MAGIC = Buffer.from("SQLite format 3\0", "latin1");

/** The refusal of a file sessiondb must not change; it names the file and why. */
export function notHermesFile(path: string, why: string): SessionDBError {
  return new SessionDBError("SCHEMA", `${path} is not a Hermes session database (${why}); it was left unchanged`);
}

/** The refusal of a write to a file a newer Hermes made: it names both versions. */
export function newerSchemaError(path: string, fileVersion: number, what: string): SessionDBError {
  return new SessionDBError(
    "SCHEMA",
    `${what} refused: ${path} has schema version ${fileVersion}, newer than this sessiondb's ${SCHEMA_VERSION}, so it is open read-only`,
  );
}

function header(path: string): Buffer {
  const fd = openSync(path, "r");
  try {
    const buf = Buffer.alloc(SQLITE_MAGIC.length);
    const n = readSync(fd, buf, 0, buf.length, 0);
    return buf.subarray(0, n);
  } finally {
    closeSync(fd);
  }
}

export function inspectDatabaseFile(path: string): DatabaseFile {
  let size: number;
  try {
    size = statSync(path).size;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return { kind: "missing" };
    throw err;
  }
  if (size === 0) return { kind: "empty" };
  if (!header(path).equals(SQLITE_MAGIC)) throw notHermesFile(path, "it is not a SQLite file");
  // Read-only: no WAL switch, no journal, no checkpoint on close.
  const db = openConnection(path, { readonly: true, busyTimeoutMs: 5000 });
  try {
    if (!tableExists(db, "sessions") || !tableExists(db, "messages")) {
      throw notHermesFile(path, "it has no sessions and messages tables");
    }
    return { kind: "hermes", version: readVersion(db) };
  } finally {
    db.close();
  }
}

/** True for a file whose schema is newer than ours: it may be read, never written. */
export function isNewer(file: DatabaseFile): file is { kind: "hermes"; version: number } {
  return file.kind === "hermes" && file.version !== null && file.version > SCHEMA_VERSION;
}

/**
 * Opening the file for a writer (direct mode, the daemon's writer thread): inspected first, so a
 * file that is not ours is refused untouched and a newer one is opened read-only, with no WAL
 * switch and no DDL. So is a file another user owns or may write (file-ownership.ts): never
 * initialised or written; direct mode may read it.
 */
import { SessionDBError } from "../errors.js";
import { openConnection, type Connection } from "./connection.js";
import { inspectDatabaseFile, isNewer, notHermesFile } from "./database-file.js";
import { writeRefusal } from "./file-ownership.js";
import { createPrivateFile } from "./private-files.js";
import { ensureSchema } from "./schema.js";
import { retryBusySync, type RetryPolicy } from "./transaction.js";

export interface OpenDatabaseOptions {
  busyTimeoutMs: number;
  synchronous?: "FULL" | "NORMAL";
  retry: RetryPolicy;
  /** Whether a missing or empty (0-byte) file may be initialised: else NOT_FOUND, or SCHEMA untouched. */
  create: boolean;
  /**
   * A Hermes file this user must not write (another user's, or writable by others): opened
   * read-only when true (direct mode), refused with PERMISSION when false (the daemon's writer).
   */
  readOnlyIfNotOurs?: boolean;
}

export interface OpenedDatabase {
  readonly db: Connection;
  /** The file's schema version when it is newer than ours (the connection is read-only), else null. */
  readonly newerVersion: number | null;
  /** Why every write is refused (PERMISSION) when the file is not this user's to write (the connection is read-only), else null. */
  readonly notOurs: SessionDBError | null;
}

export function openDatabase(path: string, options: OpenDatabaseOptions): OpenedDatabase {
  // Before the inspection: its connection's close may remove an empty -wal, whoever owns it.
  const notOurs = writeRefusal(path);
  const file = inspectDatabaseFile(path);
  if (!options.create && file.kind === "missing") {
    throw new SessionDBError("NOT_FOUND", `no database at ${path} (nothing was created)`);
  }
  if (!options.create && file.kind === "empty") throw notHermesFile(path, "it is empty (0 bytes)");
  if (notOurs !== null && (file.kind !== "hermes" || options.readOnlyIfNotOurs !== true)) throw notOurs;
  if (isNewer(file) || notOurs !== null) {
    const db = openConnection(path, { readonly: true, busyTimeoutMs: options.busyTimeoutMs });
    return { db, newerVersion: isNewer(file) ? file.version : null, notOurs };
  }
  const { busyTimeoutMs, synchronous, retry } = options;
  if (file.kind === "missing") createPrivateFile(path);
  // The schema comes before the WAL switch, so a new file is never left a SQLite file without
  // the schema's tables (which a later open would refuse as someone else's).
  const db = openConnection(path, { busyTimeoutMs, synchronous, wal: false });
  try {
    ensureSchema(db, retry);
    // Switching to WAL needs an exclusive lock that SQLite refuses at once (no busy wait) while
    // another process is switching or migrating the file too, so it retries like a write.
    retryBusySync(retry, () => db.pragma("journal_mode = WAL"));
    return { db, newerVersion: null, notOurs: null };
  } catch (err) {
    db.close();
    throw err;
  }
}

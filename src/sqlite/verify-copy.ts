/**
 * `sessiondb verify` and the check every backup gets before it is renamed into place: the file is
 * a Hermes database, SQLite's `integrity_check` (which walks the FTS5 indexes too) finds nothing,
 * and its counts are read in the same transaction.
 */
import { existsSync, rmSync, statSync } from "node:fs";
import { toSessionDBError } from "../errors.js";
import { openConnection } from "./connection.js";
import { inspectDatabaseFile, notHermesFile } from "./database-file.js";
import { checkIntegrity, type IntegrityReport } from "./integrity-check.js";

export interface CopyReport extends IntegrityReport {
  file: string;
  bytes: number;
  /** The schema version the file says it has (null: none recorded, an early Hermes file). */
  schemaVersion: number | null;
}

/**
 * Checks the file at `path` without changing it: opened read-only, and the `-wal` and `-shm`
 * files SQLite makes beside a WAL-mode file to read it are removed after when they were not
 * there before and hold nothing.
 */
export function verifyCopy(path: string): CopyReport {
  const sidecars = [`${path}-wal`, `${path}-shm`].filter((f) => !existsSync(f));
  const wal = `${path}-wal`;
  try {
    const info = inspectDatabaseFile(path);
    if (info.kind !== "hermes") throw notHermesFile(path, info.kind === "missing" ? "there is no such file" : "it is empty (0 bytes)");
    return check(path, info.version);
  } catch (err) {
    throw toSessionDBError(err);
  } finally {
    if (sidecars.includes(wal) && existsSync(wal) && statSync(wal).size === 0) {
      for (const f of sidecars) rmSync(f, { force: true });
    }
  }
}

function check(path: string, schemaVersion: number | null): CopyReport {
  const db = openConnection(path, { readonly: true, busyTimeoutMs: 5000 });
  try {
    const report = checkIntegrity(db, { quick: false, ftsContent: false });
    return { file: path, bytes: statSync(path).size, schemaVersion, ...report };
  } finally {
    db.close();
  }
}

/**
 * `backup`, `check` and `optimize` with no daemon: the file opened in this process. The backup
 * reads one snapshot (a read transaction spans the whole copy, so writers elsewhere never make it
 * restart), the merge takes the write lock one short step at a time, like the daemon's writer.
 */
import { statSync } from "node:fs";
import { openConnection, type BackupStep, type Connection } from "../sqlite/connection.js";
import { notHermesFile } from "../sqlite/database-file.js";
import { writeRefusal } from "../sqlite/file-ownership.js";
import { ftsMergeStep, MergePace, MERGED_INDEXES } from "../sqlite/fts-merge.js";
import { checkIntegrity, snapshotCounts } from "../sqlite/integrity-check.js";
import { tableExists } from "../sqlite/schema.js";
import { DEFAULT_RETRY, inWriteTransaction, retryBusySync } from "../sqlite/transaction.js";
import type { BackupResult, CheckResult, OptimizeResult } from "../protocol/control.js";

const BUSY_TIMEOUT_MS = 5000;
const BACKUP_STEP_PAGES = 1024;
const MERGE_STEP_MS = 5;

/**
 * An empty file is no database to check, copy or merge: opening it (even read-only) would switch
 * it to WAL and put -wal and -shm beside it, the database's owner's, mode and all.
 */
function refuseEmpty(path: string): void {
  if (statSync(path).size === 0) throw notHermesFile(path, "it is empty (0 bytes)");
}

function withConnection<T>(path: string, readonly: boolean, body: (db: Connection) => T): T {
  refuseEmpty(path);
  const db = openConnection(path, { readonly, busyTimeoutMs: BUSY_TIMEOUT_MS });
  try {
    return body(db);
  } finally {
    db.close();
  }
}

export async function backupDirect(path: string, dest: string, progress: (step: BackupStep) => void): Promise<BackupResult> {
  refuseEmpty(path);
  const db = openConnection(path, { readonly: true, busyTimeoutMs: BUSY_TIMEOUT_MS });
  try {
    db.exec("BEGIN");
    try {
      const counts = snapshotCounts(db);
      const done = await db.backup(dest, {
        progress: (step) => {
          progress(step);
          return BACKUP_STEP_PAGES;
        },
      });
      return { pages: done.totalPages, ...counts };
    } finally {
      db.exec("COMMIT");
    }
  } finally {
    db.close();
  }
}

export function checkDirect(path: string, quick: boolean): CheckResult {
  return withConnection(path, true, (db) => checkIntegrity(db, { quick, ftsContent: !quick }));
}

/** Merges write the file: never one another user owns or may write (issue 23, item 4). */
export function optimizeDirect(path: string, vacuum: boolean): OptimizeResult {
  const refusal = writeRefusal(path);
  if (refusal !== null) throw refusal;
  const bytes = () => statSync(path).size + fileSize(`${path}-wal`);
  const before = bytes();
  const result = withConnection(path, false, (db) => {
    const indexes = MERGED_INDEXES.filter((t) => tableExists(db, t));
    const pace = new MergePace(MERGE_STEP_MS);
    let steps = 0;
    let maxStepMs = 0;
    for (const table of indexes) {
      for (let more = true; more; ) {
        const start = performance.now();
        more = retryBusySync(DEFAULT_RETRY, () => inWriteTransaction(db, () => ftsMergeStep(db, table, pace.pages)));
        const ms = performance.now() - start;
        pace.took(ms);
        steps++;
        maxStepMs = Math.max(maxStepMs, ms);
      }
    }
    if (vacuum) {
      retryBusySync(DEFAULT_RETRY, () => db.exec("VACUUM"));
      db.pragma("wal_checkpoint(TRUNCATE)");
    }
    return { indexes: [...indexes], steps, maxStepMs };
  });
  const after = bytes();
  return { ...result, vacuumed: vacuum, bytesBefore: before, bytesAfter: after, bytesReturned: Math.max(0, before - after) };
}

function fileSize(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}

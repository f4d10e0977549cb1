/**
 * `sessiondb backup DEST`: the copy is made under a temporary name beside DEST (created
 * exclusively, private), checked (integrity_check, and its session and message counts against
 * the source's at the snapshot it was copied from), fsynced, and only then renamed to DEST, so DEST
 * is either the old file or a whole, checked copy; never a copy that does not open.
 */
import { randomBytes } from "node:crypto";
import { closeSync, constants, existsSync, fsyncSync, openSync, realpathSync, renameSync, rmSync, statSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { SessionDBError } from "../errors.js";
import { checkReplaceableFile } from "../regular-file.js";
import { verifyCopy, type CopyReport } from "../sqlite/verify-copy.js";
import { backupDirect } from "../direct/direct-maintenance.js";
import type { BackupResult } from "../protocol/control.js";
import type { MaintenanceTarget } from "./maintenance-target.js";

/** `--json` of `backup`. */
export interface BackupReport {
  /** The backup's path. */
  file: string;
  bytes: number;
  pages: number;
  sessions: number;
  messages: number;
  /** What `integrity_check` said of the copy (it is renamed into place only when "ok"). */
  integrity: "ok";
  /** Who copied the file: the daemon's writer, between its batches, or this process. */
  via: "daemon" | "direct";
  seconds: number;
}

/** How far the copy is, 0 to 1, for a progress bar. */
export type BackupProgress = (fraction: number) => void;

const POLL_MS = 200;

export async function backupToFile(target: MaintenanceTarget, destination: string, progress: BackupProgress | null): Promise<BackupReport> {
  const startedAt = performance.now();
  const file = destinationFile(target.path, destination);
  const partial = join(dirname(file), `.${basename(file)}.${randomBytes(12).toString("hex")}.partial`);
  createExclusively(partial, file);
  const removePartial = () => {
    for (const f of [partial, `${partial}-journal`, `${partial}-wal`, `${partial}-shm`]) rmSync(f, { force: true });
  };
  const onSignal = () => {
    removePartial();
    process.exit(130);
  };
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  try {
    const copied = await copyInto(target, partial, progress);
    const report = checked(verifyCopy(partial), copied, file);
    syncFile(partial);
    renameSync(partial, file);
    syncFile(dirname(file));
    return {
      file,
      bytes: report.bytes,
      pages: copied.pages,
      sessions: copied.sessions,
      messages: copied.messages,
      integrity: "ok",
      via: target.daemon === null ? "direct" : "daemon",
      seconds: (performance.now() - startedAt) / 1000,
    };
  } catch (err) {
    removePartial();
    throw err;
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  }
}

/** DEST itself, or the database's name inside DEST when it is a directory; never the database. */
function destinationFile(database: string, destination: string): string {
  let file = resolve(destination);
  if (existsSync(file) && statSync(file).isDirectory()) file = join(file, basename(database));
  if (!existsSync(dirname(file))) throw new SessionDBError("IO", `cannot write the backup ${file}: its directory ${dirname(file)} does not exist`);
  checkReplaceableFile(file, "the backup");
  const real = existsSync(file) ? realpathSync(file) : join(realpathSync(dirname(file)), basename(file));
  if (real === database || real.startsWith(`${database}-`)) {
    throw new SessionDBError("INVALID_ARGUMENT", `${destination} is the database itself (or one of its files): give another path for the backup`);
  }
  return file;
}

/** The temporary copy's file, made here so the daemon fills a file that is ours, private, with no link followed. */
function createExclusively(partial: string, file: string): void {
  try {
    closeSync(openSync(partial, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600));
  } catch (err) {
    throw new SessionDBError("IO", `cannot write the backup ${file}: ${(err as Error).message}`);
  }
}

async function copyInto(target: MaintenanceTarget, partial: string, progress: BackupProgress | null): Promise<BackupResult> {
  if (target.daemon === null) {
    return backupDirect(target.path, partial, (step) => progress?.(step.totalPages === 0 ? 1 : 1 - step.remainingPages / step.totalPages));
  }
  // The daemon's writer copies a few pages per turn; the copy's growth is how far it is.
  const total = fileBytes(target.path) + fileBytes(`${target.path}-wal`);
  const timer = progress === null ? null : setInterval(() => progress(Math.min(1, fileBytes(partial) / Math.max(1, total))), POLL_MS);
  try {
    return await target.daemon.daemon.backup(partial);
  } finally {
    if (timer !== null) clearInterval(timer);
  }
}

/** The copy's report when it is sound and holds what the source held at its snapshot; CORRUPT otherwise. */
function checked(report: CopyReport, source: BackupResult, file: string): CopyReport {
  if (!report.ok) {
    const problems = [...report.problems, ...report.fts.problems, ...report.cjk.problems];
    throw new SessionDBError("CORRUPT", `the copy for ${file} failed its integrity check (${problems.slice(0, 3).join("; ")}); it was removed and ${file} left as it was`);
  }
  if (report.sessions !== source.sessions || report.messages !== source.messages) {
    throw new SessionDBError(
      "CORRUPT",
      `the copy for ${file} holds ${report.sessions} sessions and ${report.messages} messages, the database held ${source.sessions} and ${source.messages} at the copy's snapshot; it was removed and ${file} left as it was`,
    );
  }
  return report;
}

function syncFile(path: string): void {
  const fd = openSync(path, "r");
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

function fileBytes(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}

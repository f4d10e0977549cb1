import { statSync } from "node:fs";
import type { CheckOptions } from "../sqlite/integrity-check.js";
import type { DatabaseFiles } from "../database-files.js";
import type { BackupOutcome, MergeOutcome } from "./writer-messages.js";
import type { BackupResult, CheckResult, OptimizeResult } from "../protocol/control.js";
import type { DaemonMaintenance } from "./daemon-engine.js";
import type { ReaderPool } from "./reader-pool.js";
import { walSize } from "./wal-guard.js";
import type { WriterClient } from "./writer-client.js";

/** Longest the reads are held so the TRUNCATE checkpoint after a VACUUM finds none running. */
const READ_PAUSE_MAX_MS = 2000;

/**
 * The SQLite engine's upkeep: the backup and the index merge run on the writer thread between
 * its batches, the check on a reader thread's snapshot; nothing runs on the daemon's event loop.
 */
export class SqliteMaintenance implements DaemonMaintenance {
  readonly #files: DatabaseFiles;
  readonly #writer: WriterClient;
  readonly #readers: ReaderPool;

  constructor(files: DatabaseFiles, writer: WriterClient, readers: ReaderPool) {
    this.#files = files;
    this.#writer = writer;
    this.#readers = readers;
  }

  async backup(dest: string): Promise<BackupResult> {
    return (await this.#writer.maintain({ kind: "backup", dest })) as BackupOutcome;
  }

  async check(quick: boolean, deadline: number): Promise<CheckResult> {
    return (await this.#readers.run("checkIntegrity", { quick, ftsContent: !quick } satisfies CheckOptions, deadline)) as CheckResult;
  }

  async optimize(vacuum: boolean): Promise<OptimizeResult> {
    const before = this.#bytes();
    const merged = (await this.#writer.maintain({ kind: "mergeIndexes" })) as MergeOutcome;
    if (vacuum) {
      await this.#writer.maintain({ kind: "vacuum" });
      // The rewritten file is in the WAL until a checkpoint copies it back and truncates both.
      await this.#readers.pause(READ_PAUSE_MAX_MS);
      try {
        await this.#writer.checkpoint("TRUNCATE");
      } finally {
        this.#readers.resume();
      }
    }
    const after = this.#bytes();
    return { ...merged, vacuumed: vacuum, bytesBefore: before, bytesAfter: after, bytesReturned: Math.max(0, before - after) };
  }

  /** The file and its WAL: what the database takes on the disk. */
  #bytes(): number {
    let size = 0;
    try {
      size = statSync(this.#files.db).size;
    } catch {
      // Measured again after; a file gone meanwhile is the daemon's to notice.
    }
    return size + walSize(this.#files.wal);
  }
}

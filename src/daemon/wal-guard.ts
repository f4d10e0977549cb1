import { statSync } from "node:fs";
import { walHeldError } from "../sqlite/export-snapshot.js";
import type { ExportThreads } from "./export-threads.js";
import type { DirectoryWatch } from "./directory-watch.js";
import type { ReaderPool } from "./reader-pool.js";
import type { WriterClient } from "./writer-client.js";

/** At most one size check this often while the WAL is written (and on a poll this often when its directory cannot be watched). */
const WAL_CHECK_INTERVAL_MS = 100;
/** The check's slow poll while its directory is watched: a WAL that no one writes does not grow. */
const WAL_SAFETY_POLL_MS = 5000;
const READ_PAUSE_MAX_MS = 2000;
const WAL_RETRY_AFTER_BUSY_MS = 5000;

function mib(bytes: number): string {
  return `${(bytes / 1048576).toFixed(1)} MiB`;
}

/** The size of a `-wal` file, 0 when there is none. */
export function walSize(walPath: string): number {
  try {
    return statSync(walPath).size;
  } catch {
    return 0;
  }
}

/**
 * Keeps the WAL bounded: past the limit, writes and new reads wait briefly while running reads
 * finish, so a TRUNCATE checkpoint finds no reader of ours pinning old frames. Exports in
 * progress are ended then: each holds one snapshot for as long as it streams, and that would
 * hold the WAL past its limit for as long (issue 23 item 3). The size is checked within 100 ms
 * of a write to the WAL (its directory reports it, whoever wrote), not polled: an idle daemon does
 * not wake for it.
 */
export class WalGuard {
  readonly #wal: string;
  readonly #limitBytes: number;
  readonly #writer: WriterClient;
  readonly #readers: ReaderPool;
  readonly #exports: ExportThreads;
  readonly #log: (line: string) => void;
  readonly #directory: DirectoryWatch;
  /** The next check, when one is due. */
  #timer: NodeJS.Timeout | null = null;
  /** The WAL was written since the pending check was set: its slow poll becomes a prompt one. */
  #written = false;
  #truncating = false;
  /** No TRUNCATE before this time: the last one found another process reading. */
  #retryAt = 0;
  #stopped = false;

  constructor(wal: string, limitBytes: number, writer: WriterClient, readers: ReaderPool, exports: ExportThreads, directory: DirectoryWatch, log: (line: string) => void) {
    this.#wal = wal;
    this.#limitBytes = limitBytes;
    this.#writer = writer;
    this.#readers = readers;
    this.#exports = exports;
    this.#log = log;
    this.#directory = directory;
    directory.on(wal, () => this.#onWritten());
    this.#schedule();
  }

  stop(): void {
    this.#stopped = true;
    if (this.#timer !== null) clearTimeout(this.#timer);
  }

  /** A write to the WAL: a check within WAL_CHECK_INTERVAL_MS (not one per write). */
  #onWritten(): void {
    if (this.#written || this.#stopped) return;
    this.#written = true;
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#schedule();
  }

  #schedule(): void {
    const prompt = this.#written || !this.#directory.watching;
    this.#timer = setTimeout(() => {
      this.#written = false;
      void this.#check().finally(() => {
        // A write meanwhile has set the prompt check already.
        if (!this.#stopped && !this.#written) this.#schedule();
      });
    }, prompt ? WAL_CHECK_INTERVAL_MS : WAL_SAFETY_POLL_MS);
    this.#timer.unref();
  }

  async #check(): Promise<void> {
    if (this.#truncating || this.#stopped || Date.now() < this.#retryAt) return;
    if (this.#writer.newerVersion !== null) return; // a newer Hermes's file: not ours to checkpoint
    if (this.#readers.pinned) return; // a check's snapshot: no TRUNCATE could empty the WAL before it ends
    const size = walSize(this.#wal);
    if (size <= this.#limitBytes) return;
    this.#truncating = true;
    // Writes wait too, or the WAL would grow all the while running reads finish.
    this.#writer.hold(true);
    try {
      const exporting = this.#exports.running;
      await Promise.all([
        this.#readers.pause(READ_PAUSE_MAX_MS),
        this.#exports.endAll(walHeldError(`the WAL reached ${mib(size)}`, this.#limitBytes), READ_PAUSE_MAX_MS),
      ]);
      if (exporting > 0) this.#log(`ended ${exporting} export(s) in progress: their snapshots kept the WAL (${mib(size)}) from being checkpointed`);
      const result = await this.#writer.checkpoint("TRUNCATE");
      // Another process is reading: do not hold everyone up again at once.
      if (result.busy) this.#retryAt = Date.now() + WAL_RETRY_AFTER_BUSY_MS;
      this.#log(
        `checkpoint TRUNCATE: WAL was ${(size / 1048576).toFixed(1)} MiB; ${result.busy ? "incomplete (another process is reading)" : "done"}, now ${(walSize(this.#wal) / 1048576).toFixed(1)} MiB`,
      );
    } catch (err) {
      this.#retryAt = Date.now() + WAL_RETRY_AFTER_BUSY_MS;
      this.#log(`checkpoint TRUNCATE failed: WAL is ${(size / 1048576).toFixed(1)} MiB: ${(err as Error).message}`);
    } finally {
      this.#writer.hold(false);
      this.#readers.resume();
      this.#truncating = false;
    }
  }
}

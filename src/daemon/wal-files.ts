/**
 * The writer's watch on its `-wal` and `-shm` (issue 23 item 6). Removing or truncating the WAL
 * of a live database is not something SQLite can notice: it keeps writing into the file it has
 * open. Unlinked, that file is seen by no other process and goes when the daemon does (kill -9
 * lost what it held); truncated, its frames read back as nothing (reads answered CORRUPT, and a
 * checkpoint at a clean stop copied holes into the database).
 *
 * The writer holds its own descriptors on both files and, once per batch before COMMIT (while it
 * holds the write lock, so no other process may legitimately reset the WAL), asks `fstat` whether
 * they still have a name, and whether the WAL is still as long as the frames the wal-index (the
 * `-shm` header) says it holds. Three system calls a batch, on descriptors: no path lookups.
 */
import { closeSync, fstatSync, ftruncateSync, openSync, readSync } from "node:fs";
import { endianness } from "node:os";

const WAL_HEADER_BYTES = 32;
const FRAME_HEADER_BYTES = 24;
/** The wal-index header (WalIndexHdr, 48 bytes) then the checkpoint info; read as SQLite wrote them, in native order. */
const SHM_READ_BYTES = 100;
const SHM_PAGE_SIZE_OFFSET = 14;
const SHM_MAX_FRAME_OFFSET = 16;
const SHM_BACKFILL_OFFSET = 96;

export type WalLoss = { kind: "removed" | "truncated"; message: string };

export class WalFiles {
  readonly #wal: string;
  readonly #shm: string;
  readonly #walFd: number;
  readonly #shmFd: number;
  readonly #header = Buffer.alloc(SHM_READ_BYTES);
  readonly #little = endianness() === "LE";

  private constructor(wal: string, shm: string, walFd: number, shmFd: number) {
    this.#wal = wal;
    this.#shm = shm;
    this.#walFd = walFd;
    this.#shmFd = shmFd;
  }

  /** Opens both files beside `dbPath` as they are now (the writer's connection has them open). */
  static open(dbPath: string): WalFiles {
    const wal = `${dbPath}-wal`;
    const shm = `${dbPath}-shm`;
    // Read-write: after a truncation the writer cuts what is left to a consistent length.
    const walFd = openSync(wal, "r+");
    try {
      return new WalFiles(wal, shm, walFd, openSync(shm, "r"));
    } catch (err) {
      closeSync(walFd);
      throw err;
    }
  }

  /** Null while both files are the ones opened and the WAL holds its frames; else what happened. */
  check(): WalLoss | null {
    const wal = fstatSync(this.#walFd);
    if (wal.nlink === 0) {
      return { kind: "removed", message: `${this.#wal} was removed (or replaced) under the daemon: writes there would be seen by no other process and lost when the daemon stops` };
    }
    if (fstatSync(this.#shmFd).nlink === 0) {
      return { kind: "removed", message: `${this.#shm} was removed (or replaced) under the daemon: another process opening the database would not see the WAL's index` };
    }
    const { frames, end } = this.#frames();
    if (wal.size < end) {
      return {
        kind: "truncated",
        message: `${this.#wal} was truncated under the daemon: it is ${wal.size} bytes but holds ${frames} frames (${end} bytes); writes not yet copied into the database are lost with it`,
      };
    }
    return null;
  }

  /** The frames the wal-index says the WAL holds, and the byte where the last one ends. */
  #frames(): { frames: number; end: number; pageSize: number; backfilled: number } {
    this.#header.fill(0);
    readSync(this.#shmFd, this.#header, 0, SHM_READ_BYTES, 0);
    const u16 = this.#little ? this.#header.readUInt16LE(SHM_PAGE_SIZE_OFFSET) : this.#header.readUInt16BE(SHM_PAGE_SIZE_OFFSET);
    const u32 = (offset: number) => (this.#little ? this.#header.readUInt32LE(offset) : this.#header.readUInt32BE(offset));
    const pageSize = u16 === 1 ? 65536 : u16;
    const frames = u32(SHM_MAX_FRAME_OFFSET);
    const end = frames === 0 ? 0 : WAL_HEADER_BYTES + frames * (pageSize + FRAME_HEADER_BYTES);
    return { frames, end, pageSize, backfilled: u32(SHM_BACKFILL_OFFSET) };
  }

  /**
   * After a truncation, makes what is left of the WAL safe to replay. The next opener's recovery
   * replays the WAL's frames up to its last whole transaction; SQLite's checkpoint at close copies
   * the latest frame of each page while it can read one. Both are consistent only if the WAL ends
   * at a commit frame that is not older than what the database file already holds: so the WAL is
   * cut back to its last commit frame after the frames already copied into the database, or
   * emptied when there is none (the database file alone is then the last checkpoint's state).
   * Returns the frames kept.
   */
  cutToLastCommit(): number {
    const { pageSize, backfilled } = this.#frames();
    const size = fstatSync(this.#walFd).size;
    const frameBytes = pageSize + FRAME_HEADER_BYTES;
    const intact = size < WAL_HEADER_BYTES ? 0 : Math.floor((size - WAL_HEADER_BYTES) / frameBytes);
    const header = Buffer.alloc(8);
    let keep = 0;
    for (let frame = intact; frame > backfilled; frame--) {
      readSync(this.#walFd, header, 0, 8, WAL_HEADER_BYTES + (frame - 1) * frameBytes);
      // A commit frame records the database's size in pages after it (big-endian); others 0.
      if (header.readUInt32BE(4) !== 0) {
        keep = frame;
        break;
      }
    }
    ftruncateSync(this.#walFd, keep === 0 ? 0 : WAL_HEADER_BYTES + keep * frameBytes);
    return keep;
  }

  close(): void {
    closeSync(this.#walFd);
    closeSync(this.#shmFd);
  }
}

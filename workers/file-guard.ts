/**
 * The writer's guard on the files it writes: its own descriptors on the `-wal` and `-shm`
 * (wal-files.ts), checked under the write lock before each COMMIT, and the served file's identity,
 * checked after it. Once either is found lost, nothing more is written.
 */
import { SessionDBError } from "../src/errors.js";
import { stillServed } from "../src/file-identity.js";
import { WalFiles, type WalLoss } from "../src/daemon/wal-files.js";
import type { WriterContext } from "./writer-context.js";
import { pause } from "./writer-waits.js";

/** The guard needs no connection: it watches the files by descriptor and by path. */
type GuardContext = Pick<WriterContext, "config" | "post">;

export class FileGuard {
  readonly #ctx: GuardContext;
  /** The writer's own descriptors on the `-wal` and `-shm`, checked before each COMMIT (null: not watched). */
  readonly #walFiles: WalFiles | null;
  /** Set once the `-wal` or `-shm` was found removed or truncated: nothing more is written. */
  #walLost: WalLoss | null = null;
  /** Set once a commit found the path naming another file: nothing more is applied to the old one. */
  #fileReplaced = false;

  private constructor(ctx: GuardContext, walFiles: WalFiles | null) {
    this.#ctx = ctx;
    this.#walFiles = walFiles;
  }

  /** Opens the writer's descriptors on its WAL and wal-index; a failure leaves them unwatched (logged). */
  static watch(ctx: GuardContext): FileGuard {
    let walFiles: WalFiles | null = null;
    try {
      walFiles = WalFiles.open(ctx.config.path);
    } catch (err) {
      ctx.post({ type: "log", line: `the WAL is not watched: ${(err as Error).message}` });
    }
    return new FileGuard(ctx, walFiles);
  }

  /** A file the writer does not write (a newer schema's): nothing to watch. */
  static unwatched(ctx: GuardContext): FileGuard {
    return new FileGuard(ctx, null);
  }

  get walLost(): WalLoss | null {
    return this.#walLost;
  }

  get fileReplaced(): boolean {
    return this.#fileReplaced;
  }

  /**
   * Whether the WAL and wal-index are still the files opened, whole. The first time they are not,
   * says so to the daemon (which stops) and, after a truncation, cuts what is left of the WAL to a
   * length that replays consistently. An unlinked WAL is still ours to read: the checkpoints that
   * follow (`salvage` at once, and the one at the close) copy it into the database,
   * acknowledged writes with it.
   */
  stillOurs(locked = true): boolean {
    if (this.#walLost !== null || this.#fileReplaced) return false;
    let loss = this.#walFiles?.check() ?? null;
    if (loss !== null && !locked) {
      // Without the write lock another process may be resetting the WAL (a TRUNCATE checkpoint
      // empties the index, then the file): a moment later that shows whole.
      pause(5);
      loss = this.#walFiles?.check() ?? null;
    }
    if (loss === null) return true;
    const { path, identity } = this.#ctx.config;
    if (loss.kind === "removed" && !stillServed(path, identity)) {
      // The database itself is gone (its folder removed, or it was replaced): the file watch's
      // case (exit 0 when removed, 1 when replaced), not the WAL's. Nothing more is written.
      this.#fileReplaced = true;
      return false;
    }
    this.#walLost = loss;
    let line = loss.message;
    if (loss.kind === "truncated") {
      try {
        const kept = this.#walFiles!.cutToLastCommit();
        line += kept === 0 ? "; the rest of it was emptied (the database file holds the last checkpoint)" : `; it was cut back to its last whole transaction (${kept} frames)`;
      } catch (err) {
        line += `; cutting it back failed: ${(err as Error).message}`;
      }
    }
    this.#ctx.post({ type: "walLost", kind: loss.kind, message: line });
    return false;
  }

  /** After a COMMIT: whether the path still names the file served; if not, nothing more is applied. */
  stillServed(): boolean {
    if (stillServed(this.#ctx.config.path, this.#ctx.config.identity)) return true;
    this.#fileReplaced = true;
    return false;
  }

  /** Why a write is refused once the WAL (or the database) is not ours. */
  notOursError(): SessionDBError {
    return this.#walLost !== null ? walLostError(this.#walLost) : this.replacedError();
  }

  /** The file was replaced (or removed) under the daemon: what was just committed went to the old one. */
  replacedError(): SessionDBError {
    const { path } = this.#ctx.config;
    return new SessionDBError(
      "UNAVAILABLE",
      `${path} was replaced or removed while the daemon had it open: this write is not in ${path} (at most it went to the old file); the daemon is stopping, retry`,
    );
  }

  close(): void {
    this.#walFiles?.close();
  }
}

export function walLostError(loss: WalLoss): SessionDBError {
  return new SessionDBError("UNAVAILABLE", `${loss.message}; this write was not applied; the daemon is stopping, retry`);
}

import { spawn, spawnSync } from "node:child_process";
import { constants, fstatSync, openSync } from "node:fs";
import { SessionDBError } from "./errors.js";
import { sameFile, type FileIdentity } from "./file-identity.js";

/**
 * One daemon per file, by every name (issue 23): a daemon holds an exclusive flock(2) on the
 * database file itself, taken on a file description of its own and kept for its whole life. A
 * lock on the file's inode has no name anyone can delete (unlike a lock file or a socket in the
 * runtime folder), it is the same through every hard link, symbolic link or bind mount, and the
 * kernel drops it the instant the daemon dies, even by `kill -9`.
 *
 * Why flock(2): on Linux it is a lock table of its own, apart from the POSIX (fcntl) byte-range
 * locks SQLite takes on the same file, so it never blocks SQLite and SQLite never releases it —
 * whereas a POSIX lock of ours would be dropped whenever any SQLite connection of the process
 * closes the file. Node cannot call flock(2), but flock(1) (util-linux) can lock a descriptor it
 * inherits: the lock belongs to the open file description, which stays the daemon's after
 * flock(1) exits. The Python client tests it with `fcntl.flock`, the same lock.
 *
 * This process never closes a descriptor of the database it opened here: closing any descriptor
 * of a file drops every POSIX lock the process holds on it — those of SQLite connections to the
 * same file in this process (a library using direct mode beside an embedded daemon) included.
 */

/** flock(1)'s exit status (`-E`) when someone else holds the lock. */
const CONFLICT = 75;
/** The shell's status when it cannot find the command: no flock(1) on PATH. */
const NOT_FOUND = 127;

export type GuardState = "held" | "free" | "unknown";

/** Descriptors of database files this process opened to lock, by identity; never closed (see above). */
const descriptors = new Map<string, { fd: number; held: boolean }>();

function key(id: FileIdentity): string {
  return `${id.dev}:${id.ino}`;
}

/** The daemon's guard on the file it serves. */
export class FileGuard {
  readonly #entry: { fd: number; held: boolean };

  private constructor(entry: { fd: number; held: boolean }) {
    this.#entry = entry;
  }

  /**
   * Takes the guard on the file at `path`, which must still be `identity`: the guard, "held" when
   * another process holds it (a daemon serving the file by some name, or a client testing it at
   * this instant), or "unknown" when flock(1) cannot be run here.
   */
  static async take(path: string, identity: FileIdentity): Promise<FileGuard | "held" | "unknown"> {
    let entry = descriptors.get(key(identity));
    if (entry === undefined) {
      let fd: number;
      try {
        fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY);
      } catch (err) {
        throw new SessionDBError("IO", `cannot open ${path} to take the daemon's lock on it: ${(err as Error).message}`, { cause: err });
      }
      const stat = fstatSync(fd, { bigint: true });
      // Kept even when it is not the file expected (the path was replaced meanwhile): never closed.
      descriptors.set(`${stat.dev}:${stat.ino}`, { fd, held: false });
      if (!sameFile({ dev: stat.dev, ino: stat.ino, links: stat.nlink }, identity)) {
        throw new SessionDBError("IO", `${path} was replaced while the daemon was starting`);
      }
      entry = descriptors.get(key(identity))!;
    }
    // flock(2) on a description that already holds it succeeds again: two daemons of this process are told apart here.
    if (entry.held) return "held";
    const status = await runFlock(["-n", "-x", "-E", String(CONFLICT), "3"], entry.fd);
    if (status === 0) {
      entry.held = true;
      return new FileGuard(entry);
    }
    return status === CONFLICT ? "held" : "unknown";
  }

  /** Lets go of the file (the descriptor stays open, unlocked, see above). Idempotent. */
  release(): void {
    if (!this.#entry.held) return;
    this.#entry.held = false;
    spawnSync("flock", ["-u", "3"], { stdio: ["ignore", "ignore", "ignore", this.#entry.fd] });
  }
}

/**
 * Whether a daemon holds the file at `path` (by whatever name it serves it): "unknown" when it
 * cannot be told (no flock(1), no such file). The test takes a shared flock for an instant in a
 * child process that opens the file itself, so no descriptor of the file is opened (or closed)
 * in this process.
 */
export async function fileGuardState(path: string): Promise<GuardState> {
  const status = await run("/bin/sh", ["-c", `exec flock -n -s -E ${CONFLICT} 3 3<"$1"`, "sessiondb-guard-test", path]);
  if (status === 0) return "free";
  if (status === CONFLICT) return "held";
  return "unknown";
}

/**
 * Takes flock(LOCK_EX) on the open file description `fd` (another file than a database: see
 * above), waiting up to `waitSeconds`; it is let go when the last descriptor of that description
 * closes. True once held; false when flock(1) cannot be run here or the wait ran out.
 */
export async function lockExclusive(fd: number, waitSeconds: number): Promise<boolean> {
  return (await runFlock(["-x", "-w", String(waitSeconds), "3"], fd)) === 0;
}

function runFlock(args: string[], fd: number): Promise<number | null> {
  return run("flock", args, fd);
}

function run(command: string, args: string[], fd?: number): Promise<number | null> {
  return new Promise((resolve) => {
    const stdio: Array<"ignore" | number> = ["ignore", "ignore", "ignore"];
    if (fd !== undefined) stdio.push(fd);
    const child = spawn(command, args, { stdio });
    child.once("error", () => resolve(null));
    child.once("exit", (code) => resolve(code === NOT_FOUND ? null : code));
  });
}

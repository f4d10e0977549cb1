import { statSync } from "node:fs";

/**
 * A file's identity: device and inode. Every name of one file (hard links, bind mounts, symbolic
 * links) has the same identity, so whatever must be one per file — the daemon, its lock, the
 * name direct mode opens — is keyed by it (SPEC §1 "one file, one identity").
 */
export interface FileIdentity {
  readonly dev: bigint;
  readonly ino: bigint;
  /** How many names (hard links) the file has. */
  readonly links: bigint;
}

/** The identity of the file at `path` (links followed), or null when there is none. */
export function fileIdentity(path: string): FileIdentity | null {
  const stat = statSync(path, { bigint: true, throwIfNoEntry: false });
  return stat === undefined ? null : { dev: stat.dev, ino: stat.ino, links: stat.nlink };
}

export function sameFile(a: FileIdentity | null, b: FileIdentity | null): boolean {
  return a !== null && b !== null && a.dev === b.dev && a.ino === b.ino;
}

/** `inode-<dev>-<ino>`, decimal: the name of the file's identity socket and lock (SPEC §5). */
export function identityName(id: FileIdentity): string {
  return `inode-${id.dev}-${id.ino}`;
}

/**
 * Whether `path` still names the file `served`. When it cannot tell (the directory became
 * unreadable), yes: nothing says another file took the name, and stopping would only disturb.
 */
export function stillServed(path: string, served: FileIdentity): boolean {
  try {
    // Checked after every commit: a plain stat is cheaper than a bigint one, and exact while the
    // numbers are safe integers (a larger one is checked as bigints).
    const stat = statSync(path, { throwIfNoEntry: false });
    if (stat === undefined) return false;
    if (Number.isSafeInteger(stat.dev) && Number.isSafeInteger(stat.ino)) {
      return stat.dev === Number(served.dev) && stat.ino === Number(served.ino);
    }
    return sameFile(fileIdentity(path), served);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code !== "ENOTDIR";
  }
}

import { existsSync, lstatSync, readdirSync, unlinkSync } from "node:fs";
import { join } from "node:path";
import { openLockFile, type Connection } from "./connection.js";

/**
 * Lock files of daemons that are gone (issue 30): `<db>.daemon-lock` of a daemon killed before it
 * could remove it, and the `inode-<dev>-<ino>.daemon-lock` files earlier versions left in the
 * runtime folder, one per file ever served. A lock file is stale when its exclusive lock can be
 * taken: no live daemon holds it. It is removed while that lock is held, so a daemon starting at
 * the same instant either holds it first (and it stays) or finds it gone and makes a new one
 * (InstanceLock.acquire takes only the lock file still at the path).
 */
export function removeStaleLock(path: string): boolean {
  const uid = process.getuid?.();
  const stat = lstatSync(path, { throwIfNoEntry: false });
  if (stat === undefined) {
    removeOrphanJournal(path);
    return false;
  }
  // Only a plain file of this user: never one of another user's daemon, never through a link.
  if (!stat.isFile() || stat.nlink !== 1 || (uid !== undefined && stat.uid !== uid)) return false;
  let db: Connection;
  try {
    db = openLockFile(path);
  } catch {
    return false;
  }
  try {
    db.exec("BEGIN EXCLUSIVE");
    const now = lstatSync(path, { throwIfNoEntry: false });
    if (now === undefined || now.ino !== stat.ino || now.dev !== stat.dev) return false;
    unlinkSync(path);
    try {
      unlinkSync(`${path}-journal`);
    } catch {
      // none
    }
    return true;
  } catch {
    return false; // busy: a live daemon holds it (or it is no lock file)
  } finally {
    db.close();
  }
}

/** A `-journal` left without its lock file. */
function removeOrphanJournal(path: string): void {
  const journal = `${path}-journal`;
  const stat = lstatSync(journal, { throwIfNoEntry: false });
  if (stat === undefined || !stat.isFile() || stat.uid !== process.getuid?.() || existsSync(path)) return;
  try {
    unlinkSync(journal);
  } catch {
    // gone meanwhile
  }
}

// An identity lock (`inode-<dev>-<ino>`), or the lock of a PostgreSQL database (or a file whose
// socket path was too long to sit beside it): named by a hash in the runtime folder, one per
// database ever served, so the PostgreSQL tests alone left hundreds.
const IDENTITY_LOCK = /^(inode-\d+-\d+|[0-9a-f]{32})\.daemon-lock$/;

/** Removes every stale identity lock file in the runtime folder `dir`; how many it removed. */
export function sweepStaleIdentityLocks(dir: string): number {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return 0;
  }
  let removed = 0;
  for (const name of names) {
    if (IDENTITY_LOCK.test(name)) {
      if (removeStaleLock(join(dir, name))) removed++;
    } else if (name.endsWith(".daemon-lock-journal") && IDENTITY_LOCK.test(name.slice(0, -"-journal".length))) {
      removeOrphanJournal(join(dir, name.slice(0, -"-journal".length)));
    }
  }
  return removed;
}

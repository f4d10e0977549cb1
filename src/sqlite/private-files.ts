/**
 * The conversations hold secrets: files and directories sessiondb creates are private (0600 /
 * 0700, SPEC §5). Only what this process creates gets that mode; an existing file or directory
 * keeps the mode its owner gave it. SQLite gives a database's -wal, -shm and -journal files the
 * mode of the database file, so creating that one private is enough.
 */
import { closeSync, constants, mkdirSync, openSync } from "node:fs";

/**
 * Creates an empty file readable by its owner only, unless something already exists there. The
 * creation is exclusive and follows no link: a planted symbolic link is left alone (EEXIST),
 * never a way to create a file where it points.
 */
export function createPrivateFile(path: string): void {
  let fd: number;
  try {
    fd = openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "EEXIST") return;
    throw err;
  }
  closeSync(fd);
}

/** Creates a directory (and missing parents) open to its owner only; existing ones are left as they are. */
export function makePrivateDir(path: string): void {
  mkdirSync(path, { recursive: true, mode: 0o700 });
}

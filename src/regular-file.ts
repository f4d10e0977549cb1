/**
 * A database is a regular file. A FIFO, a device (`/dev/null`, `/dev/zero`), a socket or a
 * directory given as one would read as an empty file, and an open would try to initialise it and
 * leave its `-journal` or `.daemon-lock` beside it (in /dev): it is refused where the options
 * enter, before anything is opened or created (INVALID_ARGUMENT).
 */
import { statSync, type Stats } from "node:fs";
import { join } from "node:path";
import { invalidArgument } from "./errors.js";

function kindOf(stat: Stats): string {
  if (stat.isDirectory()) return "a directory";
  if (stat.isFIFO()) return "a FIFO (named pipe)";
  if (stat.isCharacterDevice()) return "a character device";
  if (stat.isBlockDevice()) return "a block device";
  if (stat.isSocket()) return "a socket";
  return "not a regular file";
}

/** Fails with INVALID_ARGUMENT when `path` names something (links followed) that is not a regular file. */
export function checkRegularFile(path: string): void {
  let stat: Stats | undefined;
  try {
    stat = statSync(path, { throwIfNoEntry: false });
  } catch {
    return; // unreadable on the way (EACCES, ENOTDIR): the open says why
  }
  if (stat === undefined || stat.isFile()) return;
  const kind = kindOf(stat);
  const fix = stat.isDirectory()
    ? `give the file, e.g. ${join(path, "state.db")}`
    : "give the path of a database file (a missing one is created), or a postgres:// URL";
  throw invalidArgument(`${path} is ${kind}, not a database file: sessiondb opens only regular files; ${fix}`);
}

/**
 * Fails with INVALID_ARGUMENT when `path` exists and is not a regular file (links followed):
 * an output that is written under a temporary name and renamed onto `path` (a backup, `export
 * -o`) would replace a device such as /dev/null with a regular file, for every user.
 */
export function checkReplaceableFile(path: string, what: string): void {
  const stat = statSync(path, { throwIfNoEntry: false });
  if (stat === undefined || stat.isFile()) return;
  throw invalidArgument(
    `${path} is ${kindOf(stat)}: ${what} is written beside it and renamed onto it, which would replace it; give the path of a regular file`,
  );
}

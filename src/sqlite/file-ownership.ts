/**
 * Never adopt another user's file (issue 23, item 4). A database that another local user owns,
 * or may write (group or others have the write bit), is theirs to change under us: root's
 * messages written into a 0666 `state.db` someone pre-created in a shared folder are that user's
 * to read, and SQLite gives root's new `-wal`/`-shm` the owner of the database. So the database
 * and the files SQLite keeps beside it (`-wal`, `-shm`, `-journal`) are written only when this
 * user owns them and nobody else may write them; otherwise they may still be read (read-only).
 */
import { lstatSync, type Stats } from "node:fs";
import { userInfo } from "node:os";
import { SessionDBError } from "../errors.js";
import { userName } from "../user-name.js";

const SIDE_FILES = ["-wal", "-shm", "-journal"] as const;

function mode(stat: Stats): string {
  return `0${(stat.mode & 0o777).toString(8).padStart(3, "0")}`;
}

/** This user's name for `chown`, else its uid. */
function loginName(uid: number): string {
  try {
    return userInfo().username;
  } catch {
    return String(uid);
  }
}

/** Why this process must not write `file`, or null when it may. */
function why(file: string, stat: Stats, me: number): string | null {
  if (stat.isSymbolicLink()) return `${file} is a symbolic link: SQLite would write wherever it points; remove it`;
  if (!stat.isFile()) return `${file} is not a regular file; remove it`;
  if (stat.uid !== me) {
    return (
      `${file} belongs to ${userName(stat.uid)} (mode ${mode(stat)}), not to this user (${userName(me)}): sessiondb never ` +
      `initialises or writes another user's database; run sessiondb as that user, or, if the file is yours to take, ` +
      `chown ${loginName(me)} ${file} and chmod 600 ${file}; it can still be read (direct mode opens it read-only)`
    );
  }
  if ((stat.mode & 0o022) !== 0) {
    return (
      `${file} is writable by ${(stat.mode & 0o002) !== 0 ? "every user" : "its group"} (mode ${mode(stat)}): others could ` +
      `change the conversations under you, so sessiondb does not write it; chmod 600 ${file} to use it; it can still be read (direct mode opens it read-only)`
    );
  }
  return null;
}

/**
 * PERMISSION naming the file, its owner and mode and what to do, when the database at `path`
 * (its real path) or one of its `-wal`, `-shm`, `-journal` must not be written by this user;
 * null when they may (or do not exist yet: what sessiondb creates is this user's, 0600).
 */
export function writeRefusal(path: string): SessionDBError | null {
  const me = process.geteuid?.();
  if (me === undefined) return null;
  for (const file of [path, ...SIDE_FILES.map((suffix) => `${path}${suffix}`)]) {
    let stat: Stats | undefined;
    try {
      stat = lstatSync(file, { throwIfNoEntry: false });
    } catch {
      continue; // unreadable on the way: the open says why
    }
    const reason = stat === undefined ? null : why(file, stat, me);
    if (reason !== null) return new SessionDBError("PERMISSION", reason);
  }
  return null;
}

/**
 * Why a database file cannot be opened, said before SQLite says "unable to open database file":
 * the error names the path and what to do. Checked before every open by the CLI, whichever mode
 * serves it: in mode "auto" this process opens the file itself whenever no daemon answers, or
 * when the daemon goes away mid-command. Its wording speaks the CLI's `--db`, so it lives here.
 */
import { accessSync, constants, existsSync, statSync, type Stats } from "node:fs";
import { basename, dirname } from "node:path";
import { SessionDBError } from "../errors.js";
import { checkRegularFile } from "../regular-file.js";

function can(path: string, mode: number): boolean {
  try {
    accessSync(path, mode);
    return true;
  } catch {
    return false;
  }
}

function statOrNull(path: string): Stats | null {
  try {
    return statSync(path);
  } catch {
    return null;
  }
}

const who = () => `this user (uid ${process.getuid?.() ?? "?"})`;

/**
 * Fails, naming `path` and the fix, when it is not a regular file (`INVALID_ARGUMENT`), or with
 * `IO` when it cannot be read or written, or its directory cannot hold the `-wal` and `-shm` files
 * SQLite keeps beside it (or, for a file still to be created, the file itself). Another user's
 * file needs only to be readable: it is opened read-only, its writes refused (PERMISSION).
 */
export function checkDatabaseFile(path: string): void {
  checkRegularFile(path);
  const stat = statOrNull(path);
  const dir = dirname(path);
  if (stat !== null && !can(path, constants.R_OK)) {
    throw new SessionDBError(
      "IO",
      `cannot read ${path}: permission denied for ${who()}; make it readable and writable for this user ` +
        `(chown or chmod u+rw ${path}), or run sessiondb as its owner`,
    );
  }
  // Another user's file is opened read-only: it needs no write access, only a -shm to read it by.
  const othersFile = stat !== null && stat.uid !== process.geteuid?.();
  if (othersFile && existsSync(`${path}-shm`)) return;
  if (!othersFile && stat !== null && !can(path, constants.W_OK)) {
    throw new SessionDBError(
      "IO",
      `cannot write ${path}: permission denied for ${who()} (sessiondb writes the file even to read it: WAL mode); ` +
        `make it writable (chmod u+w ${path}) or run sessiondb as its owner`,
    );
  }
  if (statOrNull(dir) === null) return;
  if (!can(dir, constants.W_OK | constants.X_OK)) {
    const what = stat === null ? `cannot create ${path}` : `cannot use ${path}`;
    throw new SessionDBError(
      "IO",
      `${what}: its directory ${dir} is read-only for ${who()}, and SQLite keeps ${basename(path)}-wal and ` +
        `${basename(path)}-shm beside the database; make the directory writable for this user, or move the database to one that is`,
    );
  }
}

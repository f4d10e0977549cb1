import { accessSync, constants } from "node:fs";
import { dirname } from "node:path";
import { SessionDBError } from "../errors.js";
import { createPrivateFile } from "../sqlite/private-files.js";
import { fileIdentity, type FileIdentity } from "../file-identity.js";

/**
 * The identity of the database file, created (empty, private) if missing. `serve` needs to write
 * the file and its directory (for `-wal` and `-shm`): it refuses a file it can only read, rather
 * than start and fail every write.
 */
export function servableFile(path: string): FileIdentity {
  try {
    createPrivateFile(path);
  } catch (err) {
    throw cannotServe(path, err);
  }
  for (const target of [path, dirname(path)]) {
    try {
      accessSync(target, constants.R_OK | constants.W_OK);
    } catch (err) {
      throw cannotServe(target, err);
    }
  }
  const identity = fileIdentity(path);
  if (identity === null) throw new SessionDBError("IO", `${path} disappeared while the daemon was starting`);
  return identity;
}

function cannotServe(path: string, err: unknown): SessionDBError {
  const reason = (err as NodeJS.ErrnoException).code ?? String(err);
  return new SessionDBError(
    "IO",
    `cannot serve ${path}: this user (uid ${process.getuid?.() ?? "?"}) cannot write it (${reason}); the daemon needs to write the database and its directory, and does not start read-only (readers can open it with mode "direct")`,
    { cause: err },
  );
}

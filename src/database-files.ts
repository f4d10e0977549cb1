import { socketPathFor } from "./socket-path.js";

/** The files that belong to one database: named here once, so no module spells a suffix itself. */
export interface DatabaseFiles {
  /** The database's real path (links resolved). */
  readonly db: string;
  readonly wal: string;
  readonly shm: string;
  /** The daemon's socket (SPEC §5), unless the caller gave its own. */
  readonly socket: string;
  /** The daemon's instance lock. */
  readonly lock: string;
}

/** The files beside a database whose real path is already resolved (see `realDatabasePath`). */
export function databaseFiles(realPath: string, socketPath?: string): DatabaseFiles {
  return {
    db: realPath,
    wal: `${realPath}-wal`,
    shm: `${realPath}-shm`,
    socket: socketPath ?? socketPathFor(realPath),
    lock: `${realPath}.daemon-lock`,
  };
}

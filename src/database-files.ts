import { databaseIdentity, socketPathFor } from "./socket-path.js";
import { isPostgresUrl } from "./pg/pg-url.js";

/** The files that belong to one database: named here once, so no module spells a suffix itself. */
export interface DatabaseFiles {
  /** The database's real path (links resolved), or a PostgreSQL database's identity (no password). */
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
  // A PostgreSQL database has no folder: its lock sits beside its default socket, in the private runtime dir.
  const lock = isPostgresUrl(realPath) ? socketPathFor(realPath).replace(/\.sock$/, ".daemon-lock") : `${realPath}.daemon-lock`;
  return {
    db: databaseIdentity(realPath),
    wal: `${realPath}-wal`,
    shm: `${realPath}-shm`,
    socket: socketPath ?? socketPathFor(realPath),
    lock,
  };
}

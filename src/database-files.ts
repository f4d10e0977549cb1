import { databaseIdentity, socketPathFor } from "./socket-path.js";
import { isPostgresUrl } from "./database-location.js";

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
  /** The output of a daemon a client started (autostart), beside the socket: `state.db.sock` gives `state.db.daemon.log`. */
  readonly daemonLog: string;
}

/** The files beside a database whose real path is already resolved (see `realDatabasePath`). */
export function databaseFiles(realPath: string, socketPath?: string): DatabaseFiles {
  const socket = socketPath ?? socketPathFor(realPath);
  // A PostgreSQL database has no folder: its lock sits beside its default socket, in the private runtime dir.
  const lock = isPostgresUrl(realPath) ? socketPathFor(realPath).replace(/\.sock$/, ".daemon-lock") : `${realPath}.daemon-lock`;
  return {
    db: databaseIdentity(realPath),
    wal: `${realPath}-wal`,
    shm: `${realPath}-shm`,
    socket,
    lock,
    daemonLog: `${socket.replace(/\.sock$/, "")}.daemon.log`,
  };
}

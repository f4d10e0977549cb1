import { ENGINES, type DatabaseLocation } from "./engine-kind.js";

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

/** The files around a located database (see `locateDatabase`). */
export function databaseFiles({ engine, path }: DatabaseLocation, socketPath?: string): DatabaseFiles {
  const files = ENGINES[engine];
  const socket = socketPath ?? files.socket(path, process.env);
  return {
    db: files.identity(path, process.env),
    wal: `${path}-wal`,
    shm: `${path}-shm`,
    socket,
    lock: files.lock(path, process.env),
    daemonLog: `${socket.replace(/\.sock$/, "")}.daemon.log`,
  };
}

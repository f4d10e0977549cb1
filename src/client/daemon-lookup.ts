import { toSessionDBError, type SessionDBError } from "../errors.js";
import { fileIdentity } from "../file-identity.js";
import type { ResolvedOptions } from "../options.js";
import { databaseFiles } from "../database-files.js";
import { identitySocketPath } from "../socket-path.js";
import { DaemonClient } from "./daemon-client.js";
import { ForeignSocketError } from "./socket-trust.js";

/**
 * Finds the daemon serving the file (SPEC §5), the same rule in every client: its socket
 * (`options.socketPath`, given or derived from the real path), then — unless a socket was given —
 * the identity socket `<runtime dir>/inode-<dev>-<ino>.sock` of the file as it is now, where a
 * daemon serving it under another name (a hard link) also listens. A daemon counts only if it is
 * this user's (or root's) and serves this very file. Else UNAVAILABLE; another user's socket is
 * reported as such (ForeignSocketError) rather than as "none answers".
 */
export async function findDaemon(options: ResolvedOptions): Promise<DaemonClient> {
  const sockets = [options.socketPath];
  const id = options.findByIdentity ? fileIdentity(options.path) : null;
  if (id !== null) sockets.push(identitySocketPath(id));
  let failure: SessionDBError | null = null;
  for (const socket of sockets) {
    try {
      return await DaemonClient.connect(options, socket);
    } catch (err) {
      const e = toSessionDBError(err);
      if (e.code !== "UNAVAILABLE") throw e;
      if (failure === null || (e instanceof ForeignSocketError && !(failure instanceof ForeignSocketError))) failure = e;
    }
  }
  throw failure!;
}

/**
 * The options direct mode opens the file with: when a daemon serves the file under another name
 * (it has several links and a daemon answers on its identity socket), that name. SQLite keeps the
 * WAL and its index beside each name, so two names for one file are two WALs and a corrupt file;
 * under the daemon's name, direct mode is one more writer taking turns on the same lock.
 */
export async function directOptions(options: ResolvedOptions): Promise<ResolvedOptions> {
  const id = options.findByIdentity ? fileIdentity(options.path) : null;
  if (id === null || id.links < 2n) return options;
  let served: string;
  try {
    const client = await DaemonClient.connect(options, identitySocketPath(id));
    served = client.server.database;
    await client.close();
  } catch {
    return options;
  }
  if (served === options.path) return options;
  const files = databaseFiles(served);
  return { ...options, path: files.db, files, socketPath: files.socket };
}

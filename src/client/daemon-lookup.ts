import { setTimeout as sleep } from "node:timers/promises";
import { SessionDBError, toSessionDBError } from "../errors.js";
import { fileGuardState } from "../file-guard.js";
import { fileIdentity } from "../file-identity.js";
import type { ResolvedOptions } from "../options.js";
import { databaseFiles } from "../database-files.js";
import { identityLockPath, identitySocketPath } from "../socket-path.js";
import { DaemonClient } from "./daemon-client.js";
import { UntrustedSocketError } from "./socket-trust.js";

/**
 * How long a client waits for a daemon that holds the file (its guard, file-guard.ts) but
 * answers on none of its sockets: they were removed (the daemon makes them again at once), it is
 * starting, or it is stopping (it lets go after its last checkpoint). A bound, not a timing.
 */
const HOLDER_WAIT_MS = 15_000;
const HOLDER_POLL_MS = 50;

/**
 * A daemon holds the file but answered on no socket within the wait: nothing may write the file
 * directly (under another name that would be a second WAL and a corrupt file), and auto mode does
 * not fall back to direct mode.
 */
export class HeldFileError extends SessionDBError {
  constructor(path: string) {
    super(
      "UNAVAILABLE",
      `a sessiondb daemon holds ${path} (by this or another name: its lock on the file itself) but answers on none of its sockets; ` +
        "not opened directly, which could make a second writer under another name. Retry once it answers, or stop it",
    );
  }
}

/**
 * No daemon answers for the file and none holds it (the guard was just tested): direct mode may
 * open it under its own name (`directOptions(options, true)`), with no second test.
 */
export class NoDaemonError extends SessionDBError {
  constructor(failure: SessionDBError) {
    super("UNAVAILABLE", failure.message, { cause: failure });
  }
}

/**
 * Finds the daemon serving the file (SPEC §5), the same rule in every client: its socket
 * (`options.socketPath`, given or derived from the real path), then — unless a socket was given —
 * the identity socket `<runtime dir>/inode-<dev>-<ino>.sock` of the file as it is now, where a
 * daemon serving it under another name (a hard link) also listens. A daemon counts only if it is
 * this user's (or root's) and serves this very file. None answering while a daemon holds the file
 * (its sockets removed with the runtime folder, say), the lookup waits for it to answer again
 * (HeldFileError after HOLDER_WAIT_MS). Else UNAVAILABLE (NoDaemonError when the guard says none
 * holds the file); another user's socket is reported as such (UntrustedSocketError) rather than as
 * "none answers".
 */
export async function findDaemon(options: ResolvedOptions): Promise<DaemonClient> {
  const sockets = [options.socketPath];
  const id = options.findByIdentity ? fileIdentity(options.path) : null;
  if (id !== null) sockets.push(identitySocketPath(id));
  try {
    return await firstAnswering(options, sockets);
  } catch (err) {
    // An explicit socket is the only candidate: a daemon holding the file elsewhere is not waited for.
    if (err instanceof UntrustedSocketError || options.engine === "postgres" || !options.findByIdentity) throw err;
    const found = await awaitHolder(options, sockets);
    if (found === null) throw new NoDaemonError(toSessionDBError(err));
    return found;
  }
}

async function firstAnswering(options: ResolvedOptions, sockets: readonly string[]): Promise<DaemonClient> {
  let failure: SessionDBError | null = null;
  for (const socket of sockets) {
    try {
      return await DaemonClient.connect(options, socket);
    } catch (err) {
      const e = toSessionDBError(err);
      if (e.code !== "UNAVAILABLE") throw e;
      if (failure === null || (e instanceof UntrustedSocketError && !(failure instanceof UntrustedSocketError))) failure = e;
    }
  }
  throw failure!;
}

/**
 * Null when no daemon holds the file (or that cannot be told: no flock(1), no file); else the
 * holder, once it answers on one of `sockets` — or on the file's identity socket, which may have
 * changed — or HeldFileError if it does not within the wait. A holder that lets go meanwhile (it
 * stopped) is null: then nobody holds the file.
 */
async function awaitHolder(options: ResolvedOptions, sockets: readonly string[]): Promise<DaemonClient | null> {
  const until = Date.now() + HOLDER_WAIT_MS;
  for (;;) {
    if ((await fileGuardState(options.path)) !== "held") return null;
    if (Date.now() > until) throw new HeldFileError(options.path);
    await sleep(HOLDER_POLL_MS);
    const id = fileIdentity(options.path);
    const candidates = id === null ? sockets : [...new Set([...sockets, identitySocketPath(id)])];
    try {
      return await firstAnswering(options, candidates);
    } catch {
      // not yet
    }
  }
}

/**
 * The options direct mode opens the file with. When a daemon serves the file under another name
 * (it answers on the file's identity socket), that name: SQLite keeps the WAL and its index beside
 * each name, so two names for one file are two WALs and a corrupt file; under the daemon's name,
 * direct mode is one more writer taking turns on the same lock. When no socket answers, the guard
 * on the file itself says whether a daemon holds it all the same (its sockets removed): then the
 * open waits for it to answer, or to let go (HeldFileError if neither happens in time). Stale
 * lock files of daemons that are gone are removed on the way. `nobodyHolds`: the lookup just
 * found no daemon (NoDaemonError), so the file is not asked again.
 */
export async function directOptions(options: ResolvedOptions, nobodyHolds = false): Promise<ResolvedOptions> {
  if (options.engine === "postgres") return options;
  const id = fileIdentity(options.path);
  if (id === null) return options;
  if (nobodyHolds) {
    await removeStaleLocks(options, identityLockPath(id));
    return options;
  }
  const sockets = [identitySocketPath(id), options.socketPath];
  let client: DaemonClient;
  try {
    client = await firstAnswering(options, sockets);
  } catch {
    const holder = await awaitHolder(options, sockets);
    if (holder === null) {
      await removeStaleLocks(options, identityLockPath(id));
      return options;
    }
    client = holder;
  }
  const served = client.server.database;
  await client.close();
  if (served === options.path) return options;
  const files = databaseFiles({ engine: "sqlite", path: served });
  return { ...options, path: files.db, files, socketPath: files.socket };
}

/** The lock files of this file's dead daemon, if any are left (stale-locks.ts). */
async function removeStaleLocks(options: ResolvedOptions, identityLock: string): Promise<void> {
  const { removeStaleLock } = await import("../sqlite/stale-locks.js");
  removeStaleLock(options.files.lock);
  removeStaleLock(identityLock);
}

import { AutoStore } from "./auto-store.js";
import { connectOrStart } from "./client/autostart.js";
import { directOptions, HeldFileError, NoDaemonError } from "./client/daemon-lookup.js";
import { openDirect } from "./direct/open-direct.js";
import { SessionDBError, toSessionDBError } from "./errors.js";
import { autostartDisabled, resolveOptions, type ResolvedOptions } from "./options.js";
import type { OpenOptions, SessionDB } from "./session-db.js";
import { replayOnOpening, SpoolingStore } from "./spooling-store.js";
import type { Store } from "./store.js";

/**
 * Opens the session store: a SQLite file, or a PostgreSQL database when `path` is a
 * `postgres://` URL. Mode "direct" opens the database in this process; "daemon" talks to the
 * daemon serving the file (UNAVAILABLE when none answers); "auto" (the default) uses the daemon
 * when one answers for this file, else direct. Daemons are found as client/daemon-lookup.ts says.
 * With `autostart`, "daemon" and "auto" start a daemon when none answers. With `spool`, writes
 * the store cannot take in time are spooled (spooling-store.ts).
 */
export async function openSessionDB(options: OpenOptions = {}): Promise<SessionDB> {
  try {
    const resolved = resolveOptions(options);
    const store = await openStore(resolved, true);
    return resolved.spool === null ? store : await SpoolingStore.open(store, resolved, resolved.spool);
  } catch (err) {
    throw toSessionDBError(err);
  }
}

/**
 * `openSessionDB` without the spool (its option ignored) and without direct mode's replay on
 * opening: for `sessiondb spool replay`, which replays itself and reports what it applied.
 */
export async function openWithoutReplay(options: OpenOptions): Promise<SessionDB> {
  try {
    return await openStore(resolveOptions({ ...options, spool: false }), false);
  } catch (err) {
    throw toSessionDBError(err);
  }
}

async function openStore(resolved: ResolvedOptions, replay: boolean): Promise<Store> {
  const opened = async (store: Store): Promise<Store> => {
    // This user's spool of the database, first (a spooling handle replays its own).
    if (replay && resolved.spool === null) await replayOnOpening(store, resolved);
    return store;
  };
  if (resolved.mode === "direct") return opened(await openDirect(await directOptions(resolved)));
  if (resolved.mode === "daemon") return await connectOrStart(resolved).catch((err: unknown) => { throw autostartOff(err, resolved); });
  try {
    return new AutoStore(await connectOrStart(resolved), resolved);
  } catch (err) {
    // A daemon holds the file but does not answer: no direct writer beside it. PERMISSION:
    // autostart found the file not this user's to serve; direct mode may still read it.
    const { code } = toSessionDBError(err);
    if ((code !== "UNAVAILABLE" && code !== "PERMISSION") || err instanceof HeldFileError) throw err;
    return opened(await openDirect(await directOptions(resolved, err instanceof NoDaemonError)));
  }
}

/**
 * No daemon answered and `$SESSIONDB_AUTOSTART` kept this handle from starting one, though its
 * options asked to: the error says so (the caller asked for autostart and would not know why).
 */
function autostartOff(err: unknown, resolved: ResolvedOptions): unknown {
  if (!resolved.autostartAsked || !autostartDisabled() || toSessionDBError(err).code !== "UNAVAILABLE") return err;
  const e = toSessionDBError(err);
  return new SessionDBError("UNAVAILABLE", `${e.message}; autostart is off (SESSIONDB_AUTOSTART=${process.env.SESSIONDB_AUTOSTART ?? ""})`, { cause: err });
}

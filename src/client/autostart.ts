import { spawn } from "node:child_process";
import { closeSync, existsSync, mkdirSync, openSync } from "node:fs";
import { dirname } from "node:path";
import { pgPassword } from "../database-location.js";
import { ENGINES } from "../engine-kind.js";
import { fileURLToPath } from "node:url";
import { setTimeout as sleep } from "node:timers/promises";
import { SessionDBError, toSessionDBError } from "../errors.js";
import { writeRefusal } from "../sqlite/file-ownership.js";
import type { ResolvedOptions } from "../options.js";
import type { DaemonClient } from "./daemon-client.js";
import { findDaemon, HeldFileError } from "./daemon-lookup.js";

/** How long a started daemon has to answer its first hello. */
const START_WAIT_MS = 5000;
const POLL_MS = 50;

/** `$SESSIONDB_BIN`, else this package's own CLI run by this Node. */
function daemonCommand(): [string, string[]] {
  const bin = process.env.SESSIONDB_BIN;
  if (bin) return [bin, []];
  return [process.execPath, [fileURLToPath(new URL("../cli/main.js", import.meta.url))]];
}

/**
 * Connects to the file's daemon (found as client/daemon-lookup.ts says), starting one when none answers (`openSessionDB({ autostart:
 * true })`): `serve --db PATH --idle-exit 30` (`autostartIdleExitMs`), detached (a session of its own, output to
 * `files.daemonLog` beside the socket), then waits up to 5 s for its hello. Two processes starting
 * one at once is safe: the daemon's instance lock lets one serve and the other exit. With
 * `create: false` a missing file is NOT_FOUND rather than a daemon that would create it.
 */
export async function connectOrStart(options: ResolvedOptions): Promise<DaemonClient> {
  try {
    return await findDaemon(options);
  } catch (err) {
    // A daemon that holds the file but does not answer would refuse a second one: none is started.
    if (!options.autostart || toSessionDBError(err).code !== "UNAVAILABLE" || err instanceof HeldFileError) throw err;
  }
  const { db, socket, daemonLog } = options.files;
  const postgres = options.engine === "postgres";
  if (!options.create && !postgres && !existsSync(db)) {
    throw new SessionDBError("NOT_FOUND", `no database at ${db} (nothing was created, no daemon started)`);
  }
  // No daemon serves another user's file (or one others may write): say so, rather than start one that refuses.
  const notOurs = postgres ? null : writeRefusal(db);
  if (notOurs !== null) throw notOurs;
  const [command, prefix] = daemonCommand();
  mkdirSync(dirname(socket), { recursive: true, mode: 0o700 });
  const log = openSync(daemonLog, "a", 0o600);
  let exited: number | null = null;
  try {
    // A PostgreSQL URL goes on the command line without its secrets, its password in the environment.
    const serveDb = ENGINES[options.engine].shown(options.path);
    const idleExit = String(Math.max(1, options.autostartIdleExitMs) / 1000);
    const child = spawn(command, [...prefix, "serve", "--db", serveDb, "--socket", socket, "--idle-exit", idleExit], {
      detached: true,
      stdio: ["ignore", log, log],
      env: postgres ? pgPasswordEnv(options.path) : process.env,
    });
    child.once("error", () => (exited = -1));
    child.once("exit", (code) => (exited = code ?? -1));
    child.unref();
  } finally {
    closeSync(log);
  }
  const giveUp = Date.now() + START_WAIT_MS;
  let triedAfterExit = false;
  for (;;) {
    const exitedBefore = exited !== null;
    try {
      return await findDaemon(options);
    } catch (err) {
      if (toSessionDBError(err).code !== "UNAVAILABLE") throw err;
      // A daemon that exited may have lost the race to another one: that one answers, or not.
      if (exitedBefore && triedAfterExit) throw startFailed(socket, `exited with status ${String(exited)}`, daemonLog);
      triedAfterExit = exitedBefore;
      if (Date.now() > giveUp) throw startFailed(socket, `did not answer within ${START_WAIT_MS / 1000} s`, daemonLog);
      await sleep(POLL_MS);
    }
  }
}

/** The environment for a daemon on a PostgreSQL URL: its password, if it has one, as PGPASSWORD. */
function pgPasswordEnv(url: string): NodeJS.ProcessEnv {
  const password = pgPassword(url);
  return password === "" ? process.env : { ...process.env, PGPASSWORD: password };
}

function startFailed(socketPath: string, why: string, logPath: string): SessionDBError {
  return new SessionDBError(
    "UNAVAILABLE",
    `no sessiondb daemon answers on ${socketPath}: the daemon autostart started ${why}; see ${logPath}. Start one with \`sessiondb serve --db PATH\``,
  );
}

import { existsSync } from "node:fs";
import type { Command } from "commander";
import type { DaemonStats } from "../../protocol/control.js";
import { SessionDBError } from "../../errors.js";
import type { Engine } from "../../session-db.js";
import { duration, plural, size } from "../format.js";
import { daemonOrRefusal, globalsOf, resolvedOf } from "../open-store.js";
import { Output } from "../output.js";

/** `--json` of `status`. */
export interface StatusReport {
  /** The database file, or a PostgreSQL database's URL without its password. */
  database: string;
  /** Which database serves it: a SQLite file, or PostgreSQL (a `postgres://` URL). */
  engine: Engine;
  /** Whether the file exists; a PostgreSQL database is the server's, so always true. */
  exists: boolean;
  socket: string;
  /** The daemon's `stats`, or null when no daemon answers for the file. */
  daemon: DaemonStats | null;
  /** Why a socket found for the file was not used: another user's (or swappable by one). */
  refused: string | null;
  /** The path other commands take with the same flags. */
  route: "daemon" | "direct";
}

export function registerStatus(program: Command): void {
  program
    .command("status")
    .description("say whether a daemon serves the database (exit 1 when none) and which path commands take")
    .action(async (_opts: unknown, command: Command) => {
      const globals = globalsOf(command);
      const out = new Output(globals.json === true);
      // `db`: the real path of a file, or a PostgreSQL URL without its password.
      const { engine, files } = resolvedOf(globals);
      const { db: path, socket } = files;
      const { store: client, refused } = await daemonOrRefusal(globals);
      let daemon: DaemonStats | null = null;
      try {
        if (client !== null) daemon = await client.daemon.stats();
      } finally {
        await client?.db.close();
      }
      const report: StatusReport = {
        database: path,
        engine,
        exists: engine === "postgres" || existsSync(path),
        socket,
        daemon, refused, route: daemon !== null && !globals.direct ? "daemon" : "direct",
      };
      out.result(report, () => printStatus(out, report, globals.direct === true));
      if (daemon === null) throw new SessionDBError("UNAVAILABLE", `no daemon serves ${report.database}`);
    });
}

function printStatus(out: Output, r: StatusReport, direct: boolean): void {
  const { c } = out;
  out.line(`${c.bold("database")}  ${r.database}${r.exists ? "" : c.dim(" (does not exist yet)")}`);
  out.line(`${c.bold("engine")}    ${r.engine === "postgres" ? "PostgreSQL" : "SQLite"}`);
  if (r.daemon === null && r.refused !== null) {
    out.line(`${c.bold("daemon")}    ${c.yellow("not this user's")}: ${r.refused}`);
  } else if (r.daemon === null) {
    out.line(`${c.bold("daemon")}    ${c.yellow("none")} answers on ${r.socket}`);
  } else {
    const d = r.daemon;
    out.line(
      `${c.bold("daemon")}    ${c.green("serving")}: pid ${d.pid}, version ${d.version}, up ${duration(d.uptimeS)}, ` +
        `${plural(d.clients, "client")} (this one included), ${d.queueDepth} queued` +
        (r.engine === "sqlite" ? `, WAL ${size(d.walBytes)}` : ""),
    );
    out.line(`${c.bold("socket")}    ${d.socket}`);
    if (d.readOnly) {
      out.line(
        `${c.bold("read-only")} ${c.yellow(`the file has schema version ${d.fileSchemaVersion}`)} (newer than this sessiondb's 6): reads work, writes fail with SCHEMA`,
      );
    }
  }
  let route = "open the file directly";
  if (r.route === "daemon") route = "go through the daemon";
  else if (direct && r.daemon !== null) route += " (--direct bypasses the daemon)";
  out.line(`${c.bold("commands")}  ${route}`);
}

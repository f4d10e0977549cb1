/**
 * The files that make the daemon a service of the user's session: a systemd user unit (Linux) or a
 * launchd agent (macOS), each running `sessiondb --db <file> serve` and restarting it when it fails.
 */
import { createHash } from "node:crypto";
import { homedir } from "node:os";
import { join } from "node:path";

export type ServiceKind = "systemd" | "launchd";

export interface ServiceSpec {
  kind: ServiceKind;
  /** The unit's name (`sessiondb-<hash>.service`) or the agent's label (`sessiondb.<hash>`). */
  name: string;
  /** Where the unit or the agent's plist is written. */
  file: string;
  /** Where the daemon's log lines go, in words a person can follow. */
  logs: string;
  /** The launchd agent's log file (systemd logs to the journal). */
  logFile: string | null;
  /** The command the service runs. */
  command: string[];
  database: string;
  /**
   * The systemd `.socket` unit beside the service (socket activation: systemd makes the socket,
   * with its owner and mode, and starts the daemon on the first connection); null without one.
   */
  socketUnit: { name: string; file: string; listen: string } | null;
}

/** The service for one database file: its name follows from the file's real path, so each file gets its own. */
export function serviceSpec(
  kind: ServiceKind,
  database: string,
  cli: string,
  env: NodeJS.ProcessEnv = process.env,
  socket: string | null = null,
): ServiceSpec {
  const hash = createHash("sha256").update(database).digest("hex").slice(0, 12);
  const command = [process.execPath, cli, "--db", database, "serve"];
  const home = env.HOME || homedir();
  if (kind === "systemd") {
    const name = `sessiondb-${hash}.service`;
    const config = env.XDG_CONFIG_HOME || join(home, ".config");
    const units = join(config, "systemd", "user");
    const socketUnit = socket === null ? null : { name: `sessiondb-${hash}.socket`, file: join(units, `sessiondb-${hash}.socket`), listen: socket };
    return {
      kind, name, file: join(units, name), logs: `journalctl --user -u ${name}`, logFile: null, command, database, socketUnit,
    };
  }
  const name = `sessiondb.${hash}`;
  const logFile = join(home, "Library", "Logs", "sessiondb", `${name}.log`);
  return { kind, name, file: join(home, "Library", "LaunchAgents", `${name}.plist`), logs: logFile, logFile, command, database, socketUnit: null };
}

/** One word of an `ExecStart=` line, quoted as systemd reads it; `%` is systemd's specifier sign. */
function systemdWord(word: string): string {
  const escaped = word.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/%/g, "%%");
  return /^[\w/.@:+,=-]+$/.test(word) ? escaped : `"${escaped}"`;
}

function xml(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

/**
 * The `.socket` unit: systemd listens at the daemon's socket path (made 0600 in a 0700 folder, as
 * the user's), and hands the socket to the service on the first connection (`Accept=no`: one
 * daemon serves every client). Checked by the clients as any daemon's socket.
 */
export function socketFile(spec: ServiceSpec): string {
  const unit = spec.socketUnit!;
  return [
    "[Unit]",
    `Description=sessiondb socket for ${spec.database.replace(/%/g, "%%")}`,
    "",
    "[Socket]",
    `ListenStream=${unit.listen.replace(/%/g, "%%")}`,
    "SocketMode=0600",
    "DirectoryMode=0700",
    `Service=${spec.name}`,
    "",
    "[Install]",
    "WantedBy=sockets.target",
    "",
  ].join("\n");
}

/** The unit file or plist for `spec`. */
export function serviceFile(spec: ServiceSpec): string {
  if (spec.kind === "systemd") {
    return [
      "[Unit]",
      `Description=sessiondb daemon for ${spec.database.replace(/%/g, "%%")}`,
      "",
      "[Service]",
      "Type=simple",
      `ExecStart=${spec.command.map(systemdWord).join(" ")}`,
      // SIGTERM lets the daemon answer every queued write and checkpoint before it exits 0.
      "KillSignal=SIGTERM",
      "TimeoutStopSec=90",
      "Restart=on-failure",
      "RestartSec=2",
      "",
      // Socket-activated, it is started by its socket (enabling it enables that); otherwise at login.
      "[Install]",
      spec.socketUnit === null ? "WantedBy=default.target" : `Also=${spec.socketUnit.name}`,
      "",
    ].join("\n");
  }
  return [
    `<?xml version="1.0" encoding="UTF-8"?>`,
    `<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">`,
    `<plist version="1.0">`,
    `<dict>`,
    `  <key>Label</key>`,
    `  <string>${xml(spec.name)}</string>`,
    `  <key>ProgramArguments</key>`,
    `  <array>`,
    ...spec.command.map((word) => `    <string>${xml(word)}</string>`),
    `  </array>`,
    `  <key>RunAtLoad</key>`,
    `  <true/>`,
    // Restarted when it exits with a failure; a clean exit (sessiondb stop) stays stopped.
    `  <key>KeepAlive</key>`,
    `  <dict>`,
    `    <key>SuccessfulExit</key>`,
    `    <false/>`,
    `  </dict>`,
    `  <key>ThrottleInterval</key>`,
    `  <integer>2</integer>`,
    `  <key>StandardOutPath</key>`,
    `  <string>${xml(spec.logFile!)}</string>`,
    `  <key>StandardErrorPath</key>`,
    `  <string>${xml(spec.logFile!)}</string>`,
    `</dict>`,
    `</plist>`,
    "",
  ].join("\n");
}

import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { Option, type Command } from "commander";
import { CliError, UsageError } from "../cli-error.js";
import { connectDaemon, filesOf, globalsOf } from "../open-store.js";
import { Output } from "../output.js";
import { serviceFile, serviceSpec, socketFile, type ServiceKind, type ServiceSpec } from "../service-unit.js";

/** The command a service runs: this very installation of the CLI. */
const CLI = fileURLToPath(new URL("../main.js", import.meta.url));

interface ManagerAnswer {
  ok: boolean;
  stdout: string;
  /** Why it did not work: the command and its stderr, or that it cannot be run here. */
  why: string;
}

/** Runs `systemctl --user …` or `launchctl …`; a missing or unreachable manager is an answer, not a throw. */
function manager(spec: ServiceSpec, args: string[]): ManagerAnswer {
  const [command, prefix] = spec.kind === "systemd" ? ["systemctl", ["--user"]] : ["launchctl", []];
  const result = spawnSync(command, [...prefix, ...args], { encoding: "utf8", timeout: 60_000 });
  if (result.error !== undefined) return { ok: false, stdout: "", why: `${command} cannot be run here (${result.error.message})` };
  const why = `${[command, ...prefix, ...args].join(" ")}: ${(result.stderr || result.stdout).trim()}`;
  return { ok: result.status === 0, stdout: result.stdout.trim(), why };
}

const domain = () => `gui/${process.getuid?.() ?? 0}`;

/** Makes the manager load and start the service; null when done, else why not. */
function start(spec: ServiceSpec): string | null {
  if (spec.kind === "systemd") {
    const reload = manager(spec, ["daemon-reload"]);
    if (!reload.ok) return reload.why;
    // Socket-activated: the socket is what is started; the daemon follows on the first connection.
    const enable = manager(spec, ["enable", "--now", spec.socketUnit?.name ?? spec.name]);
    return enable.ok ? null : enable.why;
  }
  manager(spec, ["bootout", `${domain()}/${spec.name}`]);
  const load = manager(spec, ["bootstrap", domain(), spec.file]);
  return load.ok ? null : load.why;
}

function stop(spec: ServiceSpec): void {
  if (spec.kind === "systemd") {
    if (spec.socketUnit !== null) manager(spec, ["disable", "--now", spec.socketUnit.name]);
    manager(spec, ["disable", "--now", spec.name]);
  }
  else manager(spec, ["bootout", `${domain()}/${spec.name}`]);
}

/** What the manager says of the service: `active`, `inactive`, `failed`, `running`, … or why it cannot say. */
function state(spec: ServiceSpec): string {
  if (spec.kind === "systemd") {
    // is-active prints the state even when it exits non-zero (inactive, failed).
    const answer = manager(spec, ["is-active", spec.name]);
    return /^[a-z-]+$/.test(answer.stdout) ? answer.stdout : `unknown (${answer.why})`;
  }
  const answer = manager(spec, ["print", `${domain()}/${spec.name}`]);
  if (!answer.ok) return `not loaded (${answer.why})`;
  return /^\s*state = (\S+)/m.exec(answer.stdout)?.[1] ?? "loaded";
}

interface ServiceOptions {
  kind: ServiceKind;
  start: boolean;
  socket?: boolean;
}

function specOf(command: Command, opts: ServiceOptions): ServiceSpec {
  const files = filesOf(globalsOf(command));
  if (opts.socket === true && opts.kind !== "systemd") throw new UsageError("--socket is for systemd (launchd starts its agent at login)");
  // Uninstall and status look for a .socket unit either way.
  const withSocket = opts.socket === true || (opts.kind === "systemd" && opts.socket === undefined);
  const spec = serviceSpec(opts.kind, files.db, CLI, process.env, withSocket ? files.socket : null);
  if (opts.socket === undefined && spec.socketUnit !== null && !existsSync(spec.socketUnit.file)) return { ...spec, socketUnit: null };
  return spec;
}

export function registerService(program: Command): void {
  const service = program
    .command("service")
    .summary("install, remove or check the daemon for the database as a systemd or launchd service")
    .description(
      "run the daemon for the database as a service of your user: a systemd user unit (Linux) or a launchd agent " +
        "(macOS) that starts at login and restarts on failure",
    );
  const kind = () =>
    new Option("--kind <kind>", "the service manager").choices(["systemd", "launchd"]).default(process.platform === "darwin" ? "launchd" : "systemd");

  service
    .command("install")
    .description("write the unit (or agent) for --db, then enable and start it")
    .addOption(kind())
    .option("--no-start", "only write the file; do not ask the service manager to load or start it")
    .option("--socket", "systemd: also write a .socket unit, so systemd makes the daemon's socket (owner and mode from the unit) and starts the daemon on the first connection")
    .action((opts: ServiceOptions, command: Command) => {
      const spec = specOf(command, { ...opts, socket: opts.socket === true });
      const out = new Output(globalsOf(command).json === true);
      mkdirSync(dirname(spec.file), { recursive: true });
      if (spec.logFile !== null) mkdirSync(dirname(spec.logFile), { recursive: true });
      writeFileSync(spec.file, serviceFile(spec));
      if (spec.socketUnit !== null) writeFileSync(spec.socketUnit.file, socketFile(spec));
      const notStarted = opts.start ? start(spec) : "--no-start";
      const report = {
        service: spec.name, kind: spec.kind, file: spec.file, database: spec.database, logs: spec.logs, started: notStarted === null,
        ...(spec.socketUnit !== null ? { socket: spec.socketUnit.name, socketFile: spec.socketUnit.file, listen: spec.socketUnit.listen } : {}),
      };
      out.result(notStarted === null ? report : { ...report, notStarted }, () => {
        out.line(`wrote ${spec.file}`);
        if (spec.socketUnit !== null) out.line(`wrote ${spec.socketUnit.file} (systemd listens on ${spec.socketUnit.listen} and starts the daemon on the first connection)`);
        if (notStarted === null) out.line(`started ${spec.name}; it restarts on failure and at login. Logs: ${spec.logs}`);
        else {
          const how = spec.kind === "systemd"
            ? `systemctl --user daemon-reload && systemctl --user enable --now ${spec.socketUnit?.name ?? spec.name}`
            : `launchctl bootstrap ${domain()} ${spec.file}`;
          out.line(`not started (${notStarted}); start it with: ${how}`);
        }
      });
    });

  service
    .command("uninstall")
    .description("stop and disable the service for --db and remove its file")
    .addOption(kind())
    .action((opts: ServiceOptions, command: Command) => {
      const spec = specOf(command, opts);
      const out = new Output(globalsOf(command).json === true);
      if (!existsSync(spec.file)) throw new CliError("NOT_FOUND", `no ${spec.kind} service for ${spec.database} (no ${spec.file})`);
      stop(spec);
      rmSync(spec.file);
      if (spec.socketUnit !== null) rmSync(spec.socketUnit.file, { force: true });
      if (spec.kind === "systemd") manager(spec, ["daemon-reload"]);
      out.result({ service: spec.name, file: spec.file, removed: true }, () => out.line(`stopped ${spec.name} and removed ${spec.file}`));
    });

  service
    .command("status")
    .description("say whether a service is installed for --db (exit 1 when none), what its manager says, and whether the daemon answers")
    .addOption(kind())
    .action(async (opts: ServiceOptions, command: Command) => {
      const spec = specOf(command, opts);
      const out = new Output(globalsOf(command).json === true);
      const installed = existsSync(spec.file);
      const client = await connectDaemon(globalsOf(command));
      const daemon = client === null ? null : { pid: client.daemon.server.pid };
      await client?.db.close();
      const report = {
        service: spec.name, kind: spec.kind, file: spec.file, database: spec.database, installed,
        state: installed ? state(spec) : "not installed", daemon, logs: spec.logs,
      };
      out.result(report, () => {
        out.line(`service   ${spec.name} (${spec.kind})${installed ? "" : ": not installed"}`);
        out.line(`file      ${spec.file}`);
        out.line(`state     ${report.state}`);
        out.line(`daemon    ${daemon === null ? "none answers" : `serving, pid ${daemon.pid}`}`);
        out.line(`logs      ${spec.logs}`);
      });
      if (!installed) throw new CliError("NOT_FOUND", `no ${spec.kind} service for ${spec.database}; install one with: sessiondb --db ${spec.database} service install`);
    });
}

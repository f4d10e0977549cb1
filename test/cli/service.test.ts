/**
 * `sessiondb service`: the systemd user unit and the launchd agent it writes (under a temporary
 * HOME and XDG_CONFIG_HOME), the command they run starting a real daemon, and — where a systemd
 * user manager runs — the unit started by it.
 */
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { test, type TestContext } from "node:test";
import { assertFails, CLI, runCli, runJson } from "../helpers/cli.js";
import { tempDir } from "../helpers/temp-dir.js";

interface InstallReport {
  service: string;
  kind: string;
  file: string;
  logs: string;
  started: boolean;
  notStarted?: string;
}

function homes(t: TestContext): { db: string; env: Record<string, string> } {
  const dir = tempDir(t);
  return { db: join(dir, "state.db"), env: { HOME: join(dir, "home"), XDG_CONFIG_HOME: join(dir, "config") } };
}

/** The words of an `ExecStart=` line (double quotes and backslash escapes as systemd reads them). */
function execStartWords(unit: string): string[] {
  const line = /^ExecStart=(.*)$/m.exec(unit)?.[1] ?? "";
  return [...line.matchAll(/"((?:[^"\\]|\\.)*)"|(\S+)/g)].map((m) => (m[1] ?? m[2]!).replace(/\\(.)/g, "$1").replace(/%%/g, "%"));
}

const userManager = spawnSync("systemctl", ["--user", "show-environment"], { encoding: "utf8" });
const noUserManager = userManager.status === 0
  ? false
  : `no systemd user manager here (systemctl --user: ${(userManager.stderr || userManager.error?.message || "").trim()})`;

test("service install --no-start writes a systemd user unit that runs serve for --db and restarts on failure", async (t) => {
  const { db, env } = homes(t);
  const report = await runJson<InstallReport>(db, ["service", "install", "--kind", "systemd", "--no-start"], { env });
  assert.match(report.service, /^sessiondb-[0-9a-f]{12}\.service$/);
  assert.equal(report.file, join(env.XDG_CONFIG_HOME!, "systemd", "user", report.service));
  assert.equal(report.started, false);
  assert.equal(report.logs, `journalctl --user -u ${report.service}`);
  const unit = readFileSync(report.file, "utf8");
  assert.match(unit, /^\[Service\]$/m);
  assert.match(unit, /^Restart=on-failure$/m);
  assert.match(unit, /^WantedBy=default\.target$/m);
  assert.match(unit, new RegExp(`^Description=sessiondb daemon for ${db.replace(/[.]/g, "\\.")}$`, "m"));
  assert.deepEqual(execStartWords(unit), [process.execPath, CLI, "--db", db, "serve"]);

  const status = await runCli(db, ["--json", "service", "status", "--kind", "systemd"], { env });
  assert.equal(status.code, 0, status.stderr);
  assert.deepEqual(
    (({ installed, file, daemon }) => ({ installed, file, daemon }))(JSON.parse(status.stdout) as { installed: boolean; file: string; daemon: unknown }),
    { installed: true, file: report.file, daemon: null },
  );

  // What the unit runs is a working daemon for that file.
  const [command, ...args] = execStartWords(unit);
  const daemon = spawn(command!, args, { stdio: ["ignore", "ignore", "pipe"] });
  let log = "";
  daemon.stderr.setEncoding("utf8").on("data", (chunk: string) => (log += chunk));
  t.after(() => {
    if (daemon.exitCode === null) daemon.kill("SIGKILL");
  });
  while (!log.includes("listening on")) {
    assert.equal(daemon.exitCode, null, log);
    await sleep(20);
  }
  const answered = await runJson<{ daemon: { pid: number } | null }>(db, ["service", "status", "--kind", "systemd"], { env });
  assert.equal(answered.daemon?.pid, daemon.pid);
  // Listened for before the stop: the daemon may exit (and be reaped) before `stop` returns.
  const exited = once(daemon, "exit");
  assert.equal((await runCli(db, ["stop"])).code, 0);
  assert.deepEqual(await exited, [0, null], "a stopped daemon exits 0, which on-failure does not restart");

  const removed = await runCli(db, ["service", "uninstall", "--kind", "systemd"], { env });
  assert.equal(removed.code, 0, removed.stderr);
  assert.equal(existsSync(report.file), false);
  assertFails(await runCli(db, ["service", "status", "--kind", "systemd"], { env }), 1, "error NOT_FOUND: no systemd service for");
  assertFails(await runCli(db, ["service", "uninstall", "--kind", "systemd"], { env }), 1, "error NOT_FOUND:");
});

test("service install --kind launchd writes an agent that runs serve, restarts on failure and logs to ~/Library/Logs", async (t) => {
  const { db, env } = homes(t);
  const report = await runJson<InstallReport>(db, ["service", "install", "--kind", "launchd", "--no-start"], { env });
  assert.match(report.service, /^sessiondb\.[0-9a-f]{12}$/);
  assert.equal(report.file, join(env.HOME!, "Library", "LaunchAgents", `${report.service}.plist`));
  const log = join(env.HOME!, "Library", "Logs", "sessiondb", `${report.service}.log`);
  assert.equal(report.logs, log);
  assert.ok(existsSync(join(env.HOME!, "Library", "Logs", "sessiondb")), "the log directory is made");
  const plist = readFileSync(report.file, "utf8");
  assert.match(plist, new RegExp(`<key>Label</key>\\s*<string>${report.service}</string>`));
  const args = [...(/<key>ProgramArguments<\/key>\s*<array>([\s\S]*?)<\/array>/.exec(plist)?.[1] ?? "").matchAll(/<string>(.*?)<\/string>/g)].map((m) => m[1]);
  assert.deepEqual(args, [process.execPath, CLI, "--db", db, "serve"]);
  assert.match(plist, /<key>KeepAlive<\/key>\s*<dict>\s*<key>SuccessfulExit<\/key>\s*<false\/>/);
  assert.match(plist, /<key>RunAtLoad<\/key>\s*<true\/>/);
  assert.match(plist, new RegExp(`<key>StandardErrorPath</key>\\s*<string>${log}</string>`));
  assert.equal((await runCli(db, ["service", "uninstall", "--kind", "launchd"], { env })).code, 0);
  assert.deepEqual(readdirSync(join(env.HOME!, "Library", "LaunchAgents")), []);
});

test("service install: without a reachable manager the file is written and the output says how to start it", async (t) => {
  const { db, env } = homes(t);
  // An empty PATH: no systemctl or launchctl to be found.
  const result = await runCli(db, ["service", "install"], { env: { ...env, PATH: "/nonexistent" } });
  assert.equal(result.code, 0, result.stderr);
  assert.match(result.stdout, /^wrote .*\n(not started \(.*\); start it with: (systemctl --user daemon-reload && systemctl --user enable --now sessiondb-|launchctl bootstrap))/m);
});

test("service install starts the unit under the systemd user manager", { skip: noUserManager }, async (t) => {
  const { db } = homes(t);
  const report = await runJson<InstallReport>(db, ["service", "install"]);
  t.after(() => runCli(db, ["service", "uninstall"]));
  assert.equal(report.started, true, report.notStarted);
  let status = { state: "", daemon: null as { pid: number } | null };
  for (let i = 0; i < 500 && status.daemon === null; i++) {
    status = await runJson(db, ["service", "status"]);
    if (status.daemon === null) await sleep(20);
  }
  assert.equal(status.state, "active");
  assert.ok(status.daemon !== null, "the daemon answers for the file");
});

/**
 * Socket activation and structured logs (issue 28 item 4): `serve` started as systemd starts a
 * socket-activated service (a listening socket at fd 3, LISTEN_FDS=1, LISTEN_PID its own pid —
 * here by a Python parent that execs it, as systemd does) serves on that socket and leaves it in
 * place when it stops; `service install --socket` writes the .socket unit; `--log-format json`
 * writes one JSON object per line, a slow request with its op, duration and batch.
 */
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import { existsSync, lstatSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { defaultSocketPath, openSessionDB } from "../../src/index.js";
import { CLI, runCli, runJson, seedDatabase } from "../helpers/cli.js";
import { gatePath, runToSuccess, sourceFixture, spawnPython } from "../helpers/processes.js";
import { controlOf } from "../helpers/daemon.js";
import { tempDir } from "../helpers/temp-dir.js";
import { waitUntil } from "../helpers/wait-until.js";

/** What systemd does for a .socket unit: bind and listen, put it at fd 3, set LISTEN_FDS and LISTEN_PID, exec the service. */
const ACTIVATE = `
import os, socket, sys
path = sys.argv[1]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path)
os.chmod(path, 0o600)
s.listen(64)
if s.fileno() != 3:
    os.dup2(s.fileno(), 3)
os.set_inheritable(3, True)
os.environ["LISTEN_FDS"] = "1"
os.environ["LISTEN_PID"] = str(os.getpid())
os.execv(sys.argv[2], sys.argv[2:])
`;

test("serve on a socket passed as systemd passes it (LISTEN_FDS, fd 3): clients connect, stop works, the socket stays", async (t) => {
  const db = join(tempDir(t), "state.db");
  await seedDatabase(db);
  const socket = defaultSocketPath(db);
  const child = spawn("python3", ["-c", ACTIVATE, socket, process.execPath, CLI, "--db", db, "serve", "--readers", "2"], { stdio: ["ignore", "ignore", "pipe"] });
  let log = "";
  child.stderr.setEncoding("utf8").on("data", (c: string) => (log += c));
  const exited = once(child, "close");
  t.after(async () => {
    if (child.exitCode === null) {
      child.kill("SIGTERM");
      await exited;
    }
  });
  await waitUntil("serve listens on the passed socket", () => log.includes("listening on") || child.exitCode !== null);
  assert.match(log, /listening on \S+ \(the socket systemd passed, fd 3\)/, log);
  const made = lstatSync(socket);

  const client = await openSessionDB({ path: db, mode: "daemon" });
  assert.equal(client.daemon?.server.pid, child.pid, "the daemon is the process systemd started (exec keeps the pid)");
  await client.createSession("activated", "cli");
  assert.equal((await client.getSession("activated"))?.source, "cli");
  await client.close();

  assert.deepEqual(await runJson(db, ["stop"]), { stopped: true, pid: child.pid });
  const [code] = await exited;
  assert.equal(code, 0);
  assert.ok(existsSync(socket), "the socket is the unit's: left for the next activation");
  assert.equal(lstatSync(socket).ino, made.ino);
});

test("serve ignores LISTEN_FDS meant for another process (LISTEN_PID) and makes its own socket", async (t) => {
  const db = join(tempDir(t), "state.db");
  const child = spawn(process.execPath, [CLI, "--db", db, "serve", "--readers", "2"], {
    stdio: ["ignore", "ignore", "pipe"], env: { ...process.env, LISTEN_FDS: "1", LISTEN_PID: "1" },
  });
  let log = "";
  child.stderr.setEncoding("utf8").on("data", (c: string) => (log += c));
  t.after(async () => {
    if (child.exitCode === null) {
      child.kill("SIGTERM");
      await once(child, "close");
    }
  });
  await waitUntil("serve listens", () => log.includes("listening on") || child.exitCode !== null);
  assert.doesNotMatch(log, /systemd passed/);
  assert.ok(lstatSync(defaultSocketPath(db)).isSocket());
});

test("service install --socket writes a .socket unit beside the .service: systemd makes the socket 0600 and starts the daemon on demand", async (t) => {
  const dir = tempDir(t);
  const db = join(dir, "state.db");
  const env = { HOME: join(dir, "home"), XDG_CONFIG_HOME: join(dir, "config") };
  const report = await runJson<{ service: string; file: string; socket: string; socketFile: string; listen: string; started: boolean }>(
    db, ["service", "install", "--kind", "systemd", "--socket", "--no-start"], { env },
  );
  assert.equal(report.started, false);
  assert.equal(report.listen, defaultSocketPath(db));
  assert.equal(report.socketFile, join(env.XDG_CONFIG_HOME, "systemd", "user", report.socket));
  const socketUnit = readFileSync(report.socketFile, "utf8");
  assert.match(socketUnit, new RegExp(`^ListenStream=${defaultSocketPath(db).replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}$`, "m"));
  assert.match(socketUnit, /^SocketMode=0600$/m);
  assert.match(socketUnit, new RegExp(`^Service=${report.service}$`, "m"));
  const service = readFileSync(report.file, "utf8");
  assert.match(service, new RegExp(`^Also=${report.socket}$`, "m"));
  assert.doesNotMatch(service, /WantedBy=default.target/, "started by its socket, not at login");
  const removed = await runCli(db, ["service", "uninstall", "--kind", "systemd"], { env });
  assert.equal(removed.code, 0, removed.stderr);
  assert.equal(existsSync(report.socketFile), false, "uninstall removes the .socket unit too");
  assert.equal((await runCli(db, ["service", "install", "--kind", "launchd", "--socket", "--no-start"], { env })).code, 2);
});

test("a socket-activated start under the user's systemd: the first connection starts the daemon", { skip: userManagerMissing() }, async (t) => {
  const db = join(tempDir(t), "state.db");
  await seedDatabase(db);
  const report = await runJson<{ started: boolean; socket: string }>(db, ["service", "install", "--kind", "systemd", "--socket"]);
  t.after(() => runCli(db, ["service", "uninstall", "--kind", "systemd"]));
  assert.equal(report.started, true);
  const client = await openSessionDB({ path: db, mode: "daemon" });
  t.after(() => client.close());
  assert.ok((client.daemon?.server.pid ?? 0) > 0, "a daemon answers on the unit's socket");
  assert.ok(lstatSync(defaultSocketPath(db)).isSocket());
});

function userManagerMissing(): string | false {
  const probe = spawnSync("systemctl", ["--user", "is-system-running"], { encoding: "utf8" });
  if (probe.error !== undefined) return `no systemctl here (${probe.error.message}): no user manager to start a socket unit`;
  if (/offline|unknown|Failed to connect/i.test(`${probe.stdout}${probe.stderr}`)) return `no systemd user manager here (${(probe.stdout || probe.stderr).trim()})`;
  return false;
}

test("serve --log-format json: one JSON object per line; a slow request has its op, duration and batch", async (t) => {
  const dir = tempDir(t);
  const db = join(dir, "state.db");
  await seedDatabase(db);
  const child = spawn(process.execPath, [CLI, "--db", db, "serve", "--readers", "2", "--log-format", "json", "--slow-ms", "300"], { stdio: ["ignore", "ignore", "pipe"] });
  let log = "";
  child.stderr.setEncoding("utf8").on("data", (c: string) => (log += c));
  const exited = once(child, "close");
  t.after(async () => {
    if (child.exitCode === null) {
      child.kill("SIGTERM");
      await exited;
    }
  });
  await waitUntil("serve listens", () => log.includes("listening on") || child.exitCode !== null);
  const client = await openSessionDB({ path: db, mode: "daemon" });
  t.after(() => client.close());
  await client.createSession("slow", "cli");
  // Another process holds the write lock: the append waits for it, past --slow-ms.
  const release = gatePath(dir);
  const holder = spawnPython(sourceFixture("hermes_writer.py"), ["hold", db, "30", release]);
  await holder.waitForLine("locked");
  const append = client.appendMessage("slow", { role: "user", content: "waited" });
  const observer = await openSessionDB({ path: db, mode: "daemon" });
  t.after(() => observer.close());
  await waitUntil("the daemon holds the append", async () => (await controlOf(observer).stats()).writer.queueDepth > 0);
  // Slow is a time: the daemon has had the append since before it said so, and it waits out
  // --slow-ms (300) and more before the lock is released.
  await sleep(500);
  (await import("node:fs")).writeFileSync(release, "");
  await append;
  await runToSuccess(holder);
  await waitUntil("the slow request is logged", () => log.includes("slow request"));
  child.kill("SIGTERM");
  await exited;
  const events = log.trimEnd().split("\n").map((line) => JSON.parse(line) as Record<string, unknown>);
  for (const e of events) {
    assert.equal(typeof e.time, "string");
    assert.ok(!Number.isNaN(Date.parse(e.time as string)));
    assert.ok(["info", "warn", "error"].includes(e.level as string), String(e.level));
    assert.equal(typeof e.event, "string");
  }
  assert.ok(events.some((e) => (e.event as string).startsWith("listening on")));
  const slow = events.find((e) => (e.event as string).startsWith("slow request") && e.op === "appendMessage");
  assert.ok(slow, log);
  assert.equal(slow.level, "warn");
  assert.ok((slow.durationMs as number) > 300);
  assert.ok((slow.batch as number) >= 1);
});

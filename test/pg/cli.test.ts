/** The CLI on a PostgreSQL URL: --db, $SESSIONDB_PATH and the PG* variables, status, serve. */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { StatusReport } from "../../src/cli/commands/status.js";
import { runCli, runJson, ServeProcess } from "../helpers/cli.js";
import { usePgServer } from "../helpers/postgres.js";

const server = usePgServer();

test("commands work on a postgres:// URL in direct mode; status names the engine and hides the password", async (t) => {
  const url = server.fresh(t);
  const withPassword = url.replace("postgresql:///", "postgresql://postgres:s3cret@/");
  assert.equal((await runCli(withPassword, ["title", "nothing-here", "x"])).code, 1, "a missing session is an error, not a crash");
  const status = await runCli(withPassword, ["--json", "status"]);
  assert.equal(status.code, 1, "no daemon serves it yet");
  const report = JSON.parse(status.stdout) as StatusReport;
  assert.equal(report.engine, "postgres");
  assert.equal(report.daemon, null);
  assert.ok(!report.database.includes("s3cret"), report.database);
  assert.ok(!status.stdout.includes("s3cret") && !status.stderr.includes("s3cret"));
  assert.equal(report.route, "direct");
});

test("serve --db postgres://… runs the daemon; status and commands go through it", async (t) => {
  const url = server.fresh(t);
  const serve = await ServeProcess.start(url);
  t.after(() => serve.stop());
  const report = await runJson<StatusReport>(url, ["status"]);
  assert.equal(report.engine, "postgres");
  assert.equal(report.route, "daemon");
  assert.equal(report.daemon?.engine, "postgres");
  assert.match(report.socket, /sessiondb.*\.sock$/, "the socket lives in the private runtime dir");
  const human = await runCli(url, ["status"]);
  assert.match(human.stdout, /engine\s+PostgreSQL/);
  assert.equal((await runCli(url, ["stop"])).code, 0);
  assert.equal(await serve.exited, 0);
});

test("SESSIONDB_PATH and the PG* variables name the database: postgresql:///db with PGHOST and PGUSER", async (t) => {
  const url = server.fresh(t);
  const database = new URL(url).pathname.slice(1);
  const env = { SESSIONDB_PATH: `postgresql:///${database}`, PGHOST: server().socketDir, PGUSER: "postgres" };
  const report = JSON.parse((await runCli(`postgresql:///${database}`, ["--json", "status"], { env })).stdout) as StatusReport;
  assert.equal(report.engine, "postgres");
  assert.ok(report.database.includes(encodeURIComponent(server().socketDir)), report.database);
  const stats = await runCli(`postgresql:///${database}`, ["--json", "stats"], { env });
  assert.equal(stats.code, 0, stats.stderr);
  assert.equal((JSON.parse(stats.stdout) as { sessions: number }).sessions, 0);
});

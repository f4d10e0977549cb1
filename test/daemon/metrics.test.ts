/**
 * Metrics and health (issue 28 item 3): `serve --metrics` serves `/metrics`, which parses as the
 * Prometheus text format and counts what the daemon did, and `/health`, the `health` op's JSON;
 * `stats --prometheus` prints the same format with or without a daemon; only loopback is served.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { join } from "node:path";
import { test } from "node:test";
import { openSessionDB } from "../../src/index.js";
import type { HealthResult } from "../../src/protocol/control.js";
import { assertFails, CLI, runCli, seedDatabase } from "../helpers/cli.js";
import { tempDir } from "../helpers/temp-dir.js";
import { waitUntil } from "../helpers/wait-until.js";

interface Sample { name: string; labels: Record<string, string>; value: number }

/**
 * A strict reader of the text format (0.0.4): every line is a HELP, a TYPE (before the family's
 * samples) or a sample `name{label="value",…} number`; histograms' buckets grow and end in +Inf =
 * _count. Throws on anything else.
 */
function parsePrometheus(text: string): { types: Map<string, string>; samples: Sample[] } {
  const types = new Map<string, string>();
  const samples: Sample[] = [];
  assert.ok(text.endsWith("\n"), "the exposition ends with a newline");
  for (const line of text.slice(0, -1).split("\n")) {
    let m = /^# HELP ([a-zA-Z_:][a-zA-Z0-9_:]*) .+$/.exec(line);
    if (m) continue;
    m = /^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram|summary|untyped)$/.exec(line);
    if (m) {
      assert.ok(!types.has(m[1]!), `one TYPE line for ${m[1]}`);
      types.set(m[1]!, m[2]!);
      continue;
    }
    m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{((?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\.)*",?)*)\})? (\S+)$/.exec(line);
    assert.ok(m, `a sample line: ${JSON.stringify(line)}`);
    const labels: Record<string, string> = {};
    for (const [, k, v] of (m[2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[k!] = v!;
    const value = m[3] === "+Inf" ? Infinity : m[3] === "-Inf" ? -Infinity : Number(m[3]);
    assert.ok(m[3] === "NaN" || !Number.isNaN(value), `a number: ${line}`);
    const family = m[1]!.replace(/_(bucket|sum|count)$/, "");
    assert.ok(types.has(m[1]!) || types.get(family) === "histogram", `${m[1]} has a TYPE line before it`);
    samples.push({ name: m[1]!, labels, value });
  }
  for (const [name, type] of types) {
    if (type !== "histogram") continue;
    const buckets = samples.filter((s) => s.name === `${name}_bucket`);
    const counts = buckets.map((b) => b.value);
    assert.deepEqual(counts, [...counts].sort((a, b) => a - b), `${name}'s buckets are cumulative`);
    assert.equal(buckets.at(-1)?.labels.le, "+Inf");
    assert.equal(buckets.at(-1)?.value, samples.find((s) => s.name === `${name}_count`)?.value);
  }
  return { types, samples };
}

const value = (samples: Sample[], name: string, labels: Record<string, string> = {}) =>
  samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;

test("serve --metrics: /metrics parses as Prometheus text and counts the requests; /health and the health op agree", async (t) => {
  const db = join(tempDir(t), "state.db");
  await seedDatabase(db);
  const child = spawn(process.execPath, [CLI, "--db", db, "serve", "--readers", "2", "--metrics", "127.0.0.1:0"], { stdio: ["ignore", "ignore", "pipe"] });
  let log = "";
  child.stderr.setEncoding("utf8").on("data", (c: string) => (log += c));
  t.after(async () => {
    if (child.exitCode === null) {
      child.kill("SIGTERM");
      await once(child, "close");
    }
  });
  await waitUntil("the metrics address is logged", () => /metrics on (http:\/\/127\.0\.0\.1:\d+)\/metrics/.test(log));
  const base = /metrics on (http:\/\/127\.0\.0\.1:\d+)\/metrics/.exec(log)![1]!;

  const client = await openSessionDB({ path: db, mode: "daemon" });
  t.after(() => client.close());
  await client.createSession("m", "cli");
  for (let i = 0; i < 5; i++) await client.appendMessage("m", { role: "user", content: `metric ${i}` });
  await client.getSession("m");
  await assert.rejects(client.setSessionTitle("m", "x".repeat(500)), { code: "TITLE_TOO_LONG" });

  const response = await fetch(`${base}/metrics`);
  assert.equal(response.status, 200);
  assert.match(response.headers.get("content-type") ?? "", /^text\/plain; version=0\.0\.4/);
  const { types, samples } = parsePrometheus(await response.text());
  assert.equal(value(samples, "sessiondb_daemon_up"), 1);
  assert.equal(value(samples, "sessiondb_requests_total", { op: "appendMessage", code: "OK" }), 5);
  assert.equal(value(samples, "sessiondb_requests_total", { op: "setSessionTitle", code: "TITLE_TOO_LONG" }), 1);
  assert.equal(types.get("sessiondb_commit_duration_seconds"), "histogram");
  assert.ok(value(samples, "sessiondb_batch_size_count")! >= 1, "group commits are counted");
  assert.equal(value(samples, "sessiondb_writes_total"), 6);
  assert.equal(value(samples, "sessiondb_schema_version"), 6);
  assert.equal(value(samples, "sessiondb_read_only"), 0);
  assert.equal(value(samples, "sessiondb_clients"), 1);
  assert.ok(value(samples, "sessiondb_memory_bytes", { kind: "rss" })! > 0);
  assert.ok(value(samples, "sessiondb_last_commit_age_seconds")! >= 0);
  for (const name of ["sessiondb_queue_depth", "sessiondb_readers_busy", "sessiondb_wal_bytes"]) assert.ok(value(samples, name) !== undefined, name);

  const health = (await (await fetch(`${base}/health`)).json()) as HealthResult;
  assert.equal(health.status, "ok");
  const op = await client.daemon!.health();
  assert.deepEqual([op.status, op.pid, op.schemaVersion, op.database], [health.status, health.pid, 6, db]);
  assert.equal((await fetch(`${base}/nothing`)).status, 404);
  assert.equal((await fetch(`${base}/metrics`, { method: "POST" })).status, 405);

  const viaCli = await runCli(db, ["stats", "--prometheus"]);
  assert.equal(viaCli.code, 0, viaCli.stderr);
  const cliSamples = parsePrometheus(viaCli.stdout).samples;
  assert.equal(value(cliSamples, "sessiondb_daemon_up"), 1);
  assert.equal(value(cliSamples, "sessiondb_messages"), await client.messageCount());
});

test("stats --prometheus without a daemon: the file's figures, daemon_up 0", async (t) => {
  const db = join(tempDir(t), "state.db");
  await seedDatabase(db);
  const result = await runCli(db, ["stats", "--prometheus"]);
  assert.equal(result.code, 0, result.stderr);
  const { samples } = parsePrometheus(result.stdout);
  assert.equal(value(samples, "sessiondb_daemon_up"), 0);
  assert.ok(value(samples, "sessiondb_sessions")! > 0);
  assert.ok(value(samples, "sessiondb_file_bytes")! > 0);
});

test("serve --metrics refuses an address that is not loopback, and a value that is not HOST:PORT", async (t) => {
  const db = join(tempDir(t), "state.db");
  assertFails(await runCli(db, ["serve", "--metrics", "0.0.0.0:9464"]), 1, "error INVALID_ARGUMENT:");
  assertFails(await runCli(db, ["serve", "--metrics", "9464"]), 1, "error INVALID_ARGUMENT:");
});

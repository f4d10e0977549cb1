/**
 * `sessiondb` where things go wrong or get unusual: bad command lines, a missing database, and
 * the importer's edge cases (a bad line, children before parents, taken message ids).
 */
import assert from "node:assert/strict";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import type { SessionExport } from "../../src/index.js";
import { assertFails, runCli, runJson } from "../helpers/cli.js";
import { tempDir } from "../helpers/temp-dir.js";

test("a missing database: read commands fail with a clear error and create nothing", async (t) => {
  const dir = tempDir(t);
  const missing = join(dir, "nowhere", "missing.db");
  for (const args of [
    ["list"], ["show", "x"], ["search", "x"], ["export"], ["stats"], ["title", "x"], ["title", "x", "y"],
    ["delete", "x", "--yes"], ["prune", "--yes"],
  ]) {
    const result = await runCli(missing, args);
    assertFails(result, 1, `error NOT_FOUND: no database at ${missing}`);
  }
  assertFails(await runCli(missing, ["status"]), 1, "error UNAVAILABLE: no daemon serves");
  assertFails(await runCli(missing, ["stop"]), 1, "error UNAVAILABLE: no daemon serves");
  assert.equal(existsSync(join(dir, "nowhere")), false, "not even the directory was made");
});

test("usage errors exit 2; --help and --version exit 0", async (t) => {
  const db = join(tempDir(t), "state.db");
  const bare = await runCli(db, []);
  assert.equal(bare.code, 2, "no command: the help, on stderr");
  assert.match(bare.stderr, /^Usage: sessiondb/);
  assertFails(await runCli(db, ["frobnicate"]), 2, "error: unknown command 'frobnicate'");
  assertFails(await runCli(db, ["list", "--limit", "0"]), 2, "error: option '--limit <n>' argument '0' is invalid");
  assertFails(await runCli(db, ["list", "--bogus"]), 2, "error: unknown option '--bogus'");
  assertFails(await runCli(db, ["import"]), 2, "error: missing required argument 'file'");
  for (const command of ["status", "stop", "list", "show", "search", "export", "import", "title", "delete", "prune", "stats", "serve"]) {
    const help = await runCli(db, [command, "--help"]);
    assert.equal(help.code, 0, `${command} --help`);
    assert.match(help.stdout, new RegExp(`^Usage: sessiondb ${command}`));
    assert.match(help.stdout, /--json/, `${command} --help lists the global options`);
  }
  const version = await runCli(db, ["--version"]);
  assert.equal(version.code, 0);
  assert.match(version.stdout, /^\d+\.\d+\.\d+/);
});

function session(id: string, startedAt: number, extra: Partial<SessionExport> = {}): SessionExport {
  return {
    id, source: "cli", user_id: null, model: null, model_config: null, system_prompt: null, parent_session_id: null,
    started_at: startedAt, ended_at: null, end_reason: null, message_count: 0, tool_call_count: 0, input_tokens: 0,
    output_tokens: 0, cache_read_tokens: 0, cache_write_tokens: 0, reasoning_tokens: 0, billing_provider: null,
    billing_base_url: null, billing_mode: null, estimated_cost_usd: null, actual_cost_usd: null, cost_status: null,
    cost_source: null, pricing_version: null, title: null, messages: [], ...extra,
  };
}

function message(id: number, sessionId: string, timestamp: number, content: string): SessionExport["messages"][number] {
  return {
    id, session_id: sessionId, role: "user", content, tool_call_id: null, tool_calls: null, tool_name: null, timestamp,
    token_count: null, finish_reason: null, reasoning: null, reasoning_details: null, codex_reasoning_items: null,
  };
}

const jsonl = (sessions: unknown[]) => sessions.map((s) => (typeof s === "string" ? s : JSON.stringify(s))).join("\n") + "\n";

test("import: a malformed line stops there with its number; what came before is imported, nothing of it or after", async (t) => {
  const dir = tempDir(t);
  const db = join(dir, "state.db");
  const file = join(dir, "bad.jsonl");
  const bad = session("s2", 2, { messages: [{ ...message(5, "s2", 2, "x"), role: 42 as unknown as string }] });
  writeFileSync(file, jsonl([session("s1", 1), bad, session("s3", 3)]));
  const result = await runCli(db, ["import", file]);
  assert.equal(result.code, 1);
  assert.equal(
    result.stderr,
    "error INVALID_ARGUMENT: line 2: session.messages[0].role must be a string, got number; " +
      "import stopped: nothing of line 2 imported, 1 session imported in all\n",
  );
  writeFileSync(file, jsonl(["{not json", session("s4", 4)]));
  const notJson = await runCli(db, ["import", file]);
  assert.equal(notJson.code, 1);
  assert.match(notJson.stderr, /^error INVALID_ARGUMENT: line 1: not valid JSON/);
  const ids = (await runJson<SessionExport[]>(db, ["list"])).map((s) => s.id);
  assert.deepEqual(ids, ["s1"]);
  assert.match((await runCli(db, ["import", join(dir, "absent.jsonl")])).stderr, /^error NOT_FOUND: no file .*absent\.jsonl to import\n$/);
});

test("import: children before their parents keep their parents; a parent in neither file nor database is dropped", async (t) => {
  const dir = tempDir(t);
  const db = join(dir, "state.db");
  const file = join(dir, "chain.jsonl");
  // Newest first, as export writes: a chain root ← mid ← tip, and an orphan whose parent was never exported.
  writeFileSync(
    file,
    jsonl([
      session("tip", 30, { parent_session_id: "mid", messages: [message(3, "tip", 30, "three")] }),
      session("orphan", 25, { parent_session_id: "gone" }),
      session("mid", 20, { parent_session_id: "root", messages: [message(2, "mid", 20, "two")] }),
      session("root", 10, { messages: [message(1, "root", 10, "one")] }),
      // A hand-made cycle cannot be restored as it is: one of the two loses its parent.
      session("cyc-a", 5, { parent_session_id: "cyc-b" }),
      session("cyc-b", 4, { parent_session_id: "cyc-a" }),
    ]),
  );
  const summary = await runJson<{ imported: number; detachedIds: string[] }>(db, ["import", file]);
  assert.equal(summary.imported, 6);
  assert.deepEqual(summary.detachedIds, ["orphan", "cyc-b"]);
  const parents = Object.fromEntries(
    (await runJson<SessionExport[]>(db, ["list", "--children"])).map((s) => [s.id, s.parent_session_id]),
  );
  assert.deepEqual(parents, { tip: "mid", orphan: null, mid: "root", root: null, "cyc-a": "cyc-b", "cyc-b": null });
});

test("import: messages whose ids are taken get new ids in their order; counters are recomputed", async (t) => {
  const dir = tempDir(t);
  const db = join(dir, "state.db");
  const file = join(dir, "a.jsonl");
  writeFileSync(file, jsonl([session("a", 1, { messages: [message(1, "a", 5, "first"), message(2, "a", 5, "second")] })]));
  await runJson(db, ["import", file]);
  writeFileSync(
    file,
    jsonl([
      session("b", 2, {
        message_count: 99,
        messages: [
          { ...message(2, "b", 7, "later"), tool_calls: [{ function: { name: "f", arguments: "{}" } }, { name: "g" }] },
          message(1, "b", 7, "earlier"),
        ],
      }),
    ]),
  );
  const summary = await runJson<{ renumberedIds: string[] }>(db, ["import", file]);
  assert.deepEqual(summary.renumberedIds, ["b"]);
  const b = await runJson<SessionExport>(db, ["show", "b"]);
  assert.deepEqual(b.messages.map((m) => [m.id, m.content]), [[3, "earlier"], [4, "later"]]);
  assert.equal(b.message_count, 2);
  assert.equal(b.tool_call_count, 2);
});

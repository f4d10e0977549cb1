/**
 * Reading without colours: `show` sets reasoning apart from the reply by a label and indentation,
 * and `search --verbose` says what FTS5 was asked when the query was rewritten.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { test, type TestContext } from "node:test";
import { openSessionDB } from "../../src/index.js";
import { runCli } from "../helpers/cli.js";
import { runCliOnPty, stripColors } from "../helpers/pty.js";
import { tempDir } from "../helpers/temp-dir.js";

async function seed(t: TestContext): Promise<string> {
  const db = join(tempDir(t), "state.db");
  const store = await openSessionDB({ path: db, mode: "direct" });
  try {
    await store.createSession("s1", "cli");
    await store.appendMessage("s1", { role: "user", content: "how do we deploy the chat-send service?" });
    await store.appendMessage("s1", { role: "assistant", content: "Run the rollout.\nThen watch it.", reasoning: "They want the\nrollout steps." });
    await store.appendMessage("s1", { role: "assistant", content: "Done." });
  } finally {
    await store.close();
  }
  return db;
}

const SHOWN = [
  "assistant TIME",
  "  reasoning:",
  "    They want the",
  "    rollout steps.",
  "  reply:",
  "    Run the rollout.",
  "    Then watch it.",
  "",
  "assistant TIME",
  "  Done.",
].join("\n");

test("show: reasoning under a label and indented deeper than the reply, piped and with NO_COLOR on a terminal", async (t) => {
  const db = await seed(t);
  const piped = await runCli(db, ["show", "s1"]);
  assert.equal(piped.code, 0, piped.stderr);
  const times = (text: string) => text.replace(/\d{4}-\d\d-\d\d \d\d:\d\d:\d\d/g, "TIME");
  assert.ok(times(piped.stdout).includes(SHOWN), piped.stdout);
  const terminal = await runCliOnPty(db, ["show", "s1"], { columns: 80, env: { NO_COLOR: "1" } });
  assert.doesNotMatch(terminal.output, /\x1b\[/, "no colours with NO_COLOR");
  assert.ok(times(terminal.output).includes(SHOWN), terminal.output);
  const coloured = await runCliOnPty(db, ["show", "s1"], { columns: 80 });
  assert.ok(times(stripColors(coloured.output)).includes(SHOWN), "the same layout with colours");
});

test("search --verbose: says what was searched and why for NOT x, -x and a-b; nothing without --verbose", async (t) => {
  const db = await seed(t);
  const not = await runCli(db, ["search", "--verbose", "--", "NOT deploy"]);
  assert.equal(not.code, 0, not.stderr);
  assert.match(not.stderr, /^searched FTS5 for: deploy \(rewritten from: NOT deploy\)$/m);
  assert.match(not.stderr, /a leading NOT was dropped .*finds messages WITH deploy/);
  assert.match(not.stdout, />>>deploy<<</, "the hits stay on stdout");

  const dash = await runCli(db, ["search", "--verbose", "--", "-deploy"]);
  assert.match(dash.stderr, /-deploy: FTS5 reads a leading "-" as "not in column deploy".*matches nothing.*NOT deploy/);
  assert.equal(dash.stdout.trim(), "no matches");

  const hyphen = await runCli(db, ["search", "--verbose", "chat-send"]);
  assert.match(hyphen.stderr, /^searched FTS5 for: "chat-send" \(rewritten from: chat-send\)$/m);
  assert.match(hyphen.stderr, /chat-send is searched as a phrase: .*"chat" then "send" next to each other/);

  const plain = await runCli(db, ["search", "--verbose", "rollout"]);
  assert.equal(plain.stderr, "searched FTS5 for: rollout (as typed)\n");
  const json = await runCli(db, ["--json", "search", "--verbose", "chat-send"]);
  assert.equal(JSON.parse(json.stdout).length, 1, "--json stays one document on stdout");
  assert.equal((await runCli(db, ["search", "chat-send"])).stderr, "", "quiet without --verbose");
});

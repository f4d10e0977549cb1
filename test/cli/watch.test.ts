/**
 * `sessiondb tail` and `sessiondb watch` (issue 26): the last messages formatted like `show`,
 * `tail -f` on a real pseudo-terminal showing a message another process appends (the reference
 * implementation's own sqlite3 writer, or a direct-mode handle), ended by Ctrl-C; `watch --json`
 * lines, in direct mode and through the daemon.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { join } from "node:path";
import { test } from "node:test";
import { openSessionDB } from "../../src/index.js";
import { CLI, runCli } from "../helpers/cli.js";
import { shortTempDir, startDaemon } from "../helpers/daemon.js";
import { runToSuccess, sourceFixture, spawnPython } from "../helpers/processes.js";
import { startCliOnPty, stripColors } from "../helpers/pty.js";
import { waitUntil } from "../helpers/wait-until.js";

const SESSION = "20261206_210000_tailme";

async function seeded(t: Parameters<typeof shortTempDir>[0], count: number): Promise<string> {
  const db = join(shortTempDir(t), "state.db");
  const store = await openSessionDB({ path: db, mode: "direct" });
  try {
    await store.createSession(SESSION, "cli", { model: "m" });
    await store.createSession("other-session", "telegram");
    for (let i = 1; i <= count; i++) await store.appendMessage(SESSION, { role: i % 2 ? "user" : "assistant", content: `line ${i}` });
    await store.appendMessage(SESSION, { role: "tool", toolName: "sh", content: "red \x1b[31mALERT\x1b[0m done" });
    await store.appendMessage("other-session", { role: "user", content: "not this one" });
  } finally {
    await store.close();
  }
  return db;
}

/** A message appended by the reference implementation (its sqlite3, BEGIN IMMEDIATE), in a process of its own. */
async function referenceAppend(db: string, session: string, content: string): Promise<void> {
  const calls = JSON.stringify([["append_message", [session, "user", content], {}]]);
  await runToSuccess(spawnPython(sourceFixture("hermes_writer.py"), ["calls", db, calls]));
}

test("tail prints the last N messages as show does, escapes neutralised; --json one row a line", async (t) => {
  const db = await seeded(t, 12);
  const tail = await runCli(db, ["tail", "-n", "3", SESSION.slice(0, 18)]);
  assert.equal(tail.code, 0, tail.stderr);
  const show = await runCli(db, ["show", SESSION]);
  // The same lines as the end of show's: role, time, content (the header is show's alone).
  const shown = show.stdout.trimEnd().split("\n");
  const tailed = tail.stdout.trimEnd().split("\n");
  assert.deepEqual(tailed, shown.slice(shown.length - tailed.length));
  assert.match(tail.stdout, /line 11/);
  assert.doesNotMatch(tail.stdout, /line 10\b/);
  assert.ok(tail.stdout.includes("red \\x1b[31mALERT\\x1b[0m done"), "the escape is shown, not sent");
  assert.ok(!tail.stdout.includes("\x1b"), tail.stdout);
  const defaults = await runCli(db, ["tail", SESSION]);
  assert.equal(stripColors(defaults.stdout).match(/^(user|assistant|tool) /gm)?.length, 10, "ten by default");
  const json = await runCli(db, ["--json", "tail", "-n", "2", SESSION]);
  const rows = json.stdout.trimEnd().split("\n").map((line) => JSON.parse(line) as { content: string; session_id: string });
  assert.deepEqual(rows.map((r) => r.content), ["line 12", "red \x1b[31mALERT\x1b[0m done"]);
  const none = await runCli(db, ["tail", "-n", "0", SESSION]);
  assert.equal(none.stdout, "");
  const missing = await runCli(db, ["tail", "no-such-session"]);
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /^error NOT_FOUND/);
  const bad = await runCli(db, ["tail", "-n", "x", SESSION]);
  assert.equal(bad.code, 2);
});

for (const mode of ["direct", "daemon"] as const) {
  test(`tail -f on a terminal (${mode}) shows a message the reference appends in another process, until Ctrl-C`, async (t) => {
    const db = await seeded(t, 3);
    if (mode === "daemon") await startDaemon(t, db);
    const tail = startCliOnPty(db, ["tail", "-f", "-n", "2", SESSION], { columns: 100 });
    t.after(() => tail.type("\x03"));
    await waitUntil("tail -f printed the last messages", () => tail.output().includes("ALERT"));
    assert.ok(!stripColors(tail.output()).includes("line 2"), "only the last two");
    await referenceAppend(db, SESSION, "appended by the reference writer");
    await referenceAppend(db, "other-session", "another session's message");
    await waitUntil("tail -f showed the appended message", () => tail.output().includes("appended by the reference writer"));
    const store = await openSessionDB({ path: db });
    t.after(() => store.close());
    await store.appendMessage(SESSION, { role: "assistant", content: "and one from a sessiondb handle \x1b]0;title\x07" });
    await waitUntil("tail -f showed the handle's message", () => tail.output().includes("and one from a sessiondb handle"));
    await store.endSession(SESSION, "user_exit");
    await waitUntil("tail -f noted the end", () => stripColors(tail.output()).includes("session ended (user_exit)"));
    tail.type("\x03");
    assert.equal(await tail.exited, 0, tail.output());
    const out = stripColors(tail.output());
    assert.ok(!out.includes("another session's message"), out);
    assert.ok(out.includes("\\x1b]0;title\\x07"), "escapes neutralised as show does");
    assert.ok(out.indexOf("appended by the reference writer") < out.indexOf("and one from a sessiondb handle"));
  });
}

/** `sessiondb --json watch …` piped, its stdout read as JSON lines while the test writes. */
function startWatch(db: string, args: readonly string[]) {
  const child = spawn(process.execPath, [CLI, "--db", db, ...args], { stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  const exited = once(child, "close").then(([code]) => code as number | null);
  return {
    lines: () => stdout.split("\n").filter((line) => line !== ""),
    stderr: () => stderr,
    stop: async () => {
      child.kill("SIGINT");
      return exited;
    },
  };
}

for (const mode of ["direct", "daemon"] as const) {
  test(`watch --json (${mode}): every session's events, one JSON line each; --source keeps one source`, async (t) => {
    const db = await seeded(t, 1);
    if (mode === "daemon") await startDaemon(t, db);
    const all = startWatch(db, ["--json", "watch"]);
    const telegram = startWatch(db, ["--json", "watch", "--source", "telegram"]);
    const human = startWatch(db, ["watch"]);
    t.after(async () => {
      await Promise.all([all.stop(), telegram.stop(), human.stop()]);
    });
    const store = await openSessionDB({ path: db });
    t.after(() => store.close());
    // A watch starts from now: probe until each watcher shows it listens.
    let probes = 0;
    await waitUntil("every watcher is listening", async () => {
      await store.appendMessage("other-session", { role: "user", content: `probe ${++probes}` });
      await new Promise((resolve) => setTimeout(resolve, 50));
      return [all, telegram, human].every((w) => w.lines().some((line) => line.includes("probe")));
    });
    const before = all.lines().length;
    // Each change waits for its line: a poll (direct mode) that sees two commits at once tells
    // a session's state once, as the row it reads.
    const shows = async (what: string, needle: string) =>
      waitUntil(what, () => all.lines().slice(before).some((line) => line.includes(needle))).catch((err: unknown) => {
        throw new Error(`${String(err)}: ${all.lines().slice(-5).join("\n")} ${all.stderr()}`);
      });
    await store.createSession("new-one", "cli", { model: "gpt" });
    await shows("created", '"created"');
    const id = await store.appendMessage("new-one", { role: "user", content: "first words" });
    await shows("the message", "first words");
    await store.setSessionTitle("new-one", "Fresh");
    await shows("titled", '"titled"');
    await store.endSession("new-one", "done");
    await shows("ended", '"ended"');
    const events = all.lines().slice(before).map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((e) => e.sessionId === "new-one" || (e.message as { session_id?: string } | undefined)?.session_id === "new-one");
    assert.deepEqual(
      events.map((e) => (e.type === "message" ? `message ${(e.message as { id: number }).id}` : `${e.change as string} ${e.sessionId as string}`)),
      ["created new-one", `message ${id}`, "titled new-one", "ended new-one"],
    );
    assert.equal((events[3]!.session as { end_reason: string }).end_reason, "done");
    await waitUntil("the human watcher saw the end", () => human.lines().some((line) => line.includes("ended")));
    const lines = human.lines().filter((line) => line.includes("new-one"));
    assert.match(lines[0]!, /^\d\d:\d\d:\d\d {2}new-one {2}created cli gpt$/);
    assert.match(lines[1]!, /^\d\d:\d\d:\d\d {2}new-one {2}user: first words$/);
    assert.match(lines[2]!, /^\d\d:\d\d:\d\d {2}new-one {2}titled "Fresh"$/);
    assert.match(lines[3]!, /^\d\d:\d\d:\d\d {2}new-one {2}ended \(done\)$/);
    assert.ok(telegram.lines().every((line) => !line.includes("new-one")), "another source's events are not shown");
    assert.equal(await all.stop(), 0, all.stderr());
  });
}

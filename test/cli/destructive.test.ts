/**
 * `prune` and `delete` say exactly what they will delete before they do: `prune --dry-run`, the
 * counts in the prompt (answered on a real pseudo-terminal), and a title that leads to a `#N`
 * continuation.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { test, type TestContext } from "node:test";
import { openSessionDB } from "../../src/index.js";
import { assertFails, runCli, runJson } from "../helpers/cli.js";
import { runCliOnPty } from "../helpers/pty.js";
import { tempDir } from "../helpers/temp-dir.js";

/** Two ended sessions (3 messages in all), one still active, and the lineage `proj`, `proj #2`, `proj #3`. */
async function seed(t: TestContext): Promise<string> {
  const db = join(tempDir(t), "state.db");
  const store = await openSessionDB({ path: db, mode: "direct" });
  try {
    for (const [id, messages, ended] of [["old-a", 2, true], ["old-b", 1, true], ["live", 4, false]] as const) {
      await store.createSession(id, "cli");
      for (let i = 0; i < messages; i++) await store.appendMessage(id, { role: "user", content: `m${i}` });
      if (ended) await store.endSession(id, "done");
    }
    for (const [id, title] of [["p1", "proj"], ["p2", "proj #2"], ["p3", "proj #3"]]) {
      await store.createSession(id!, "telegram");
      await store.setSessionTitle(id!, title!);
    }
  } finally {
    await store.close();
  }
  return db;
}

const ids = async (db: string) => (await runJson<Array<{ id: string }>>(db, ["list", "--limit", "100"])).map((r) => r.id).sort();

test("prune --dry-run lists what would go with the counts, and deletes nothing", async (t) => {
  const db = await seed(t);
  const text = await runCli(db, ["prune", "--older-than", "0", "--dry-run"]);
  assert.equal(text.code, 0, text.stderr);
  assert.match(text.stdout, /^old-a .*2 messages/m);
  assert.match(text.stdout, /^old-b .*1 message$/m);
  assert.doesNotMatch(text.stdout, /^live/m, "an active session never goes");
  assert.match(text.stdout, /^would prune 2 sessions \(3 messages\): ended sessions started more than 0 days ago; nothing was deleted$/m);
  const json = await runJson<{ dryRun: boolean; wouldDelete: number; messages: number; sessions: Array<{ id: string }> }>(
    db, ["prune", "--older-than", "0", "--dry-run"],
  );
  assert.deepEqual([json.dryRun, json.wouldDelete, json.messages], [true, 2, 3]);
  assert.deepEqual(json.sessions.map((s) => s.id).sort(), ["old-a", "old-b"]);
  assert.deepEqual(await ids(db), ["live", "old-a", "old-b", "p1", "p2", "p3"], "nothing was deleted");
  const none = await runCli(db, ["prune", "--dry-run"]);
  assert.match(none.stdout, /^would prune 0 sessions \(0 messages\)/m, "none is 90 days old");
});

test("the prune prompt says how many sessions and messages; no keeps them, yes deletes them", async (t) => {
  const db = await seed(t);
  const no = await runCliOnPty(db, ["prune", "--older-than", "0"], { columns: 100, waitFor: "[y/N]", answer: "n\r" });
  assert.match(no.output, /Delete 2 sessions \(3 messages\), the ended sessions started more than 0 days ago\? \[y\/N\]/);
  assert.equal(no.code, 1);
  assert.match(no.output, /error CANCELLED: nothing was deleted/);
  assert.equal((await ids(db)).length, 6);
  const yes = await runCliOnPty(db, ["prune", "--older-than", "0"], { columns: 100, waitFor: "[y/N]", answer: "y\r" });
  assert.equal(yes.code, 0, yes.output);
  assert.match(yes.output, /pruned 2 sessions/);
  assert.deepEqual(await ids(db), ["live", "p1", "p2", "p3"]);
});

test("delete: a title that leads to a #N continuation names the session it picked before asking", async (t) => {
  const db = await seed(t);
  const asked = await runCliOnPty(db, ["delete", "proj"], { columns: 100, waitFor: "[y/N]", answer: "n\r" });
  const picked = asked.output.indexOf(`"proj" led to its newest continuation: session p3 "proj #3" (0 messages)`);
  assert.ok(picked >= 0, asked.output);
  assert.ok(picked < asked.output.indexOf("[y/N]"), "said before the question");
  assert.equal(asked.code, 1);
  assert.deepEqual(await ids(db), ["live", "old-a", "old-b", "p1", "p2", "p3"]);
});

test("delete --yes: a lineage resolution is refused; the id or the exact title is needed", async (t) => {
  const db = await seed(t);
  const refused = await runCli(db, ["delete", "proj", "--yes"]);
  assertFails(refused, 1, `error AMBIGUOUS: "proj" led to its newest continuation: session p3 "proj #3"`);
  assert.match(refused.stderr, /with --yes give its id or its exact title \(nothing was deleted\)/);
  assert.equal((await ids(db)).length, 6);
  assert.deepEqual(await runJson(db, ["delete", "proj #3", "--yes"]), { deleted: 1 });
  assert.deepEqual(await runJson(db, ["delete", "p2", "--yes"]), { deleted: 1 });
  // With #2 and #3 gone, "proj" is the exact title of p1.
  assert.deepEqual(await runJson(db, ["delete", "proj", "--yes"]), { deleted: 1 });
  assert.deepEqual(await ids(db), ["live", "old-a", "old-b"]);
});

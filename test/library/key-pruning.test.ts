/**
 * Idempotency keys past their retention are pruned by the writer in bounded steps (issue 25):
 * the first keyed write of a direct-mode handle, and the first group commit of a daemon, delete at
 * most 500 expired keys, the oldest first, and never a key still within its retention.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import { openSessionDB } from "../../src/index.js";
import { startDaemon } from "../helpers/daemon.js";
import { rawAll, rawWrite } from "../helpers/raw-db.js";
import { tempDir } from "../helpers/temp-dir.js";

const HOUR = 3600;

/** A file with 700 keys 25 h old and one fresh key. */
async function fileWithOldKeys(path: string): Promise<void> {
  const db = await openSessionDB({ path, mode: "direct" });
  await db.createSession("s", "cli", undefined, { idempotencyKey: "fresh" });
  await db.close();
  rawWrite(path, (raw) => {
    const insert = raw.prepare("INSERT INTO sessiondb_idempotency (key, op, digest, result, created_at) VALUES (?, 'endSession', 'd', '[]', ?)");
    const old = Date.now() / 1000 - 25 * HOUR;
    for (let i = 0; i < 700; i++) insert.run(`old-${i}`, old);
    // Written after the fresh key but older: pruning reads the oldest rowids, so it comes last.
  });
}

function keysLeft(path: string): string[] {
  return rawAll<{ key: string }>(path, "SELECT key FROM sessiondb_idempotency ORDER BY rowid").map((r) => r.key);
}

test("direct mode: the first keyed write prunes at most 500 expired keys, never a fresh one", async (t) => {
  const path = join(tempDir(t), "state.db");
  await fileWithOldKeys(path);
  const db = await openSessionDB({ path, mode: "direct" });
  t.after(() => db.close());
  await db.appendMessage("s", { role: "user", content: "x" }, { idempotencyKey: "new" });
  const left = keysLeft(path);
  assert.equal(left.length, 702 - 499, "one bounded step: the fresh key and 499 old ones were the first 500 rows read");
  assert.ok(left.includes("fresh") && left.includes("new"));
  assert.equal(await db.createSession("s", "cli", undefined, { idempotencyKey: "fresh" }), "s", "a kept key still answers");
});

test("the daemon: its first group commit prunes a bounded step; --key-retention-hours keeps keys longer", async (t) => {
  const path = join(tempDir(t), "state.db");
  await fileWithOldKeys(path);
  const kept = await startDaemon(t, path, { args: ["--key-retention-hours", "48"] });
  const db = await kept.open(t);
  await db.appendMessage("s", { role: "user", content: "x" });
  assert.equal(keysLeft(path).length, 702, "25 h old keys are within a 48 h retention");
  await db.close();
  assert.equal((await kept.stop()).code, 0);

  const pruning = await startDaemon(t, path);
  const again = await pruning.open(t);
  await again.appendMessage("s", { role: "user", content: "y" });
  assert.equal(keysLeft(path).length, 703 - 499);
});

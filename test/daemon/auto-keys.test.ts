/**
 * Automatic idempotency keys sort by the time they were made (docs/library.md): a write with no
 * key of the caller's gets `auto-<time>-<uuid>-<n>`, `<time>` nine base-36 digits of milliseconds,
 * so the keys of later writes, from any client, sort after the kept ones and each commit adds its
 * keys at the end of the keys table's index.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { openSessionDB } from "../../src/index.js";
import { freshDbPath, startDaemon } from "../helpers/daemon.js";
import { rawAll } from "../helpers/raw-db.js";

const AUTO_KEY = /^auto-([0-9a-z]{9})-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-[0-9a-z]+$/;

test("automatic keys carry the time they were made first, so later writes' keys sort after earlier ones", async (t) => {
  const dbPath = freshDbPath(t);
  const daemon = await startDaemon(t, dbPath);
  const db = await openSessionDB({ path: dbPath, mode: "daemon", socketPath: daemon.socketPath });
  t.after(() => db.close());
  const before = Date.now();
  await db.createSession("s", "cli");
  const rounds: number[][] = [];
  for (let round = 0; round < 3; round++) {
    const ids = await Promise.all(Array.from({ length: 5 }, (_, i) => db.appendMessage("s", { role: "user", content: `round ${round} turn ${i}` })));
    rounds.push(ids);
    await sleep(3); // the next round's keys are made in a later millisecond
  }
  const after = Date.now();

  const rows = rawAll<{ key: string; op: string; result: string }>(dbPath, "SELECT key, op, result FROM sessiondb_idempotency ORDER BY rowid");
  assert.equal(rows.length, 16, "createSession and 15 appends, each under a key of its own");
  for (const { key } of rows) {
    const match = AUTO_KEY.exec(key);
    assert.ok(match, `an automatic key: ${key}`);
    const madeAt = parseInt(match[1]!, 36);
    assert.ok(madeAt >= before && madeAt <= after, `made at ${madeAt}, within the test's ${before}–${after}`);
  }
  const keyOf = new Map(rows.filter((r) => r.op === "appendMessage").map((r) => [(JSON.parse(r.result) as number[])[0]!, r.key]));
  const madeAt = (id: number) => parseInt(AUTO_KEY.exec(keyOf.get(id)!)![1]!, 36);
  for (let round = 1; round < rounds.length; round++) {
    const earlier = rounds.slice(0, round).flat();
    const latestBefore = earlier.map((id) => keyOf.get(id)!).sort().at(-1)!;
    const latestTime = Math.max(...earlier.map(madeAt));
    for (const id of rounds[round]!) {
      // Each write's own time, not one drawn per process: made after the pause, it is later.
      assert.ok(madeAt(id) > latestTime, `round ${round}'s ${keyOf.get(id)} was made after every earlier key (${latestTime})`);
      assert.ok(keyOf.get(id)! > latestBefore, `round ${round}'s ${keyOf.get(id)} sorts after ${latestBefore}`);
    }
  }
});

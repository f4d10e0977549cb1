/**
 * The CJK substring index (src/engine/cjk-index.ts): the daemon keeps it, searches are served
 * from it, and whatever happens to the messages table it answers exactly as the LIKE scan does.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import { openConnection } from "../src/engine/connection.js";
import { catchUpCjkIndex, createCjkIndex, sweepCjkIndex } from "../src/engine/cjk-index.js";
import { operations } from "../src/engine/operations.js";
import { ensureSchema } from "../src/engine/schema.js";
import { DEFAULT_RETRY, inWriteTransaction } from "../src/engine/transaction.js";
import { openSessionDB, sanitizeFtsQuery } from "../src/index.js";
import { freshDbPath, startDaemon } from "./helpers/daemon.js";
import { rawAll, rawGet, rawRun, rawWrite } from "./helpers/raw-db.js";
import { tempDir } from "./helpers/temp-dir.js";

const indexedIds = (path: string) => rawAll<{ id: number }>(path, "SELECT rowid AS id FROM messages_cjk ORDER BY rowid").map((r) => r.id);
const mark = (path: string) => rawGet<{ high_water: number }>(path, "SELECT high_water FROM messages_cjk_state")?.high_water;

test("the daemon indexes CJK messages as it commits them and serves CJK search from the index", async (t) => {
  const path = freshDbPath(t);
  const daemon = await startDaemon(t, path);
  const db = await daemon.open(t);
  await db.createSession("s", "cli");
  const zh = await db.appendMessage("s", { role: "user", content: "我们的数据库很快" });
  await db.appendMessage("s", { role: "user", content: "plain english only" });
  const ja = await db.appendMessage("s", { role: "assistant", content: "これはデータベースです" });
  const last = await db.appendMessage("s", { role: "user", content: "more english" });
  assert.deepEqual(indexedIds(path), [zh, ja], "only messages with CJK are indexed");
  assert.equal(mark(path), last, "the mark covers every committed message");
  assert.deepEqual((await db.searchMessages("数据库很")).map((h) => h.id), [zh]);

  // Take the entry out of the index behind the daemon's back: a search served from the index
  // no longer finds the message (a scan would).
  rawRun(path, "DELETE FROM messages_cjk WHERE rowid = ?", zh);
  assert.deepEqual(await db.searchMessages("数据库很"), []);
  assert.deepEqual((await db.searchMessages("数据")).map((h) => h.id), [zh], "a 2-character query walks every indexed message, not the trigrams");
});

test("a daemon started on a file of unindexed messages indexes them while idle, and search is exact meanwhile", async (t) => {
  const path = join(tempDir(t), "backlog.db");
  const direct = await openSessionDB({ path, mode: "direct" });
  await direct.createSession("s", "cli");
  await direct.close();
  const count = 12_000;
  rawWrite(path, (raw) => {
    const insert = raw.prepare("INSERT INTO messages (session_id, role, content, timestamp) VALUES ('s', 'user', ?, ?)");
    for (let i = 0; i < count; i++) insert.run(i % 3 === 0 ? `第${i}号数据库记录` : `record ${i}`, 1_700_000_000 + i);
  });
  assert.equal(rawGet(path, "SELECT 1 AS x FROM sqlite_master WHERE name = 'messages_cjk'"), undefined, "direct mode never creates the index");

  const daemon = await startDaemon(t, path);
  const db = await daemon.open(t);
  const hits = await db.searchMessages("号数据库记", { limit: 5000 });
  assert.equal(hits.length, count / 3, "every CJK message is found, indexed yet or not");
  const top = rawGet<{ id: number }>(path, "SELECT max(id) AS id FROM messages")!.id;
  for (let i = 0; i < 600 && mark(path) !== top; i++) await new Promise((r) => setTimeout(r, 50));
  assert.equal(mark(path), top, "the backlog got indexed");
  assert.equal(indexedIds(path).length, count / 3);
  assert.equal((await db.searchMessages("号数据库记", { limit: 5000 })).length, count / 3);
});

/** A small deterministic generator, so a failure replays. */
function random(seed: number): () => number {
  let s = seed;
  return () => {
    s = (s * 1_103_515_245 + 12_345) % 2 ** 31;
    return s / 2 ** 31;
  };
}

test("under random appends, deletes, reused ids and partial catch-ups the index answers exactly as the LIKE scan", (t) => {
  const path = join(tempDir(t), "random.db");
  const db = openConnection(path, { busyTimeoutMs: 1000 });
  t.after(() => db.close());
  ensureSchema(db, DEFAULT_RETRY);
  assert.equal(inWriteTransaction(db, () => createCjkIndex(db)), true);
  const rand = random(15);
  const alphabet = [..."数据库迁移会话笔记%_\\\"Ab"];
  const text = (n: number) => Array.from({ length: n }, () => alphabet[Math.floor(rand() * alphabet.length)]).join("");
  db.exec("INSERT INTO sessions (id, source, started_at) VALUES ('s', 'cli', 0)");
  const insert = db.prepare("INSERT INTO messages (id, session_id, role, content, timestamp) VALUES (?, 's', 'user', ?, ?)");
  const search = (query: string) => {
    const params = operations.searchMessages.parse([query, { limit: 10_000 }]);
    return (operations.searchMessages.run(db, params as never) as Array<{ id: number }>).map((h) => h.id);
  };
  const scan = (query: string) => {
    const raw = query.replace(/^[\s"]+|[\s"]+$/g, "");
    const pattern = `%${raw.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    return db
      .prepare("SELECT id FROM messages WHERE content LIKE ? ESCAPE '\\' ORDER BY timestamp DESC, id DESC")
      .pluck()
      .all(pattern) as number[];
  };
  // Only queries FTS5 finds nothing for reach the fallback (SPEC §3.1 step 4).
  const ftsFinds = (query: string) => {
    try {
      return db.prepare("SELECT 1 FROM messages_fts WHERE messages_fts MATCH ?").get(sanitizeFtsQuery(query)) !== undefined;
    } catch {
      return false;
    }
  };
  let clock = 0;
  let compared = 0;
  for (let round = 0; round < 150; round++) {
    const action = rand();
    if (action < 0.45) {
      for (let i = 0; i < 20; i++) insert.run(null, rand() < 0.2 ? `english ${text(3)}` : text(8 + Math.floor(rand() * 12)), ++clock);
    } else if (action < 0.6) {
      db.exec(`DELETE FROM messages WHERE id IN (SELECT id FROM messages ORDER BY random() LIMIT 5)`);
    } else if (action < 0.75) {
      // The newest rows (from just below the index's mark, or the last three) go, and their ids
      // come back with other text.
      const markId = db.prepare("SELECT high_water FROM messages_cjk_state").pluck().get() as number;
      const from = rand() < 0.5 ? markId - 1 : (db.prepare("SELECT max(id) - 2 FROM messages").pluck().get() as number);
      const ids = db.prepare("SELECT id FROM messages WHERE id >= ? ORDER BY id").pluck().all(from) as number[];
      db.prepare("DELETE FROM messages WHERE id >= ?").run(from);
      for (const id of ids) insert.run(id, text(10), ++clock);
    } else {
      inWriteTransaction(db, () => {
        catchUpCjkIndex(db, 1 + Math.floor(rand() * 200));
        if (rand() < 0.3) sweepCjkIndex(db);
      });
    }
    for (let q = 0; q < 12; q++) {
      const query = text(1 + Math.floor(rand() * 5));
      if (!/[\u4E00-\u9FFF]/u.test(query) || ftsFinds(query)) continue;
      const expected = scan(query);
      assert.deepEqual(search(query), expected, `round ${round}, query ${JSON.stringify(query)}`);
      if (expected.length > 0) compared++;
    }
  }
  assert.ok(compared >= 100, `only ${compared} queries with hits were compared`);
});

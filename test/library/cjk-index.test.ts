/**
 * The CJK substring index (src/sqlite/cjk-index.ts): the daemon keeps it, searches are served
 * from it, and whatever happens to the messages table it answers exactly as the LIKE scan does —
 * also when the walk stops early (src/sqlite/cjk-search.ts): whatever order ids and times are in,
 * with filters, offsets past the point where a walk could stop, short queries, and an index that lags.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { test, type TestContext } from "node:test";
import { openConnection, type Connection } from "../../src/sqlite/connection.js";
import { catchUpCjkIndex, createCjkIndex, sweepCjkIndex } from "../../src/sqlite/cjk-index.js";
import { parseOperation } from "../../src/operations/operation-params.js";
import { runOperation } from "../../src/sqlite/operations.js";
import { ensureSchema } from "../../src/sqlite/schema.js";
import { DEFAULT_RETRY, inWriteTransaction } from "../../src/sqlite/transaction.js";
import { openSessionDB, sanitizeFtsQuery, type SearchHit } from "../../src/index.js";
import { freshDbPath, startDaemon } from "../helpers/daemon.js";
import { rawAll, rawGet, rawRun, rawWrite } from "../helpers/raw-db.js";
import { tempDir } from "../helpers/temp-dir.js";
import { waitUntil } from "../helpers/wait-until.js";

const indexedIds = (path: string) => rawAll<{ id: number }>(path, "SELECT rowid AS id FROM messages_cjk ORDER BY rowid").map((r) => r.id);
const mark = (path: string) => rawGet<{ high_water: number }>(path, "SELECT high_water FROM messages_cjk_state")?.high_water;
const topId = (path: string) => rawGet<{ id: number }>(path, "SELECT max(id) AS id FROM messages")!.id;

/** Waits until the daemon serving `path` has indexed every message (it does so while idle). */
async function indexed(path: string): Promise<void> {
  await waitUntil("the daemon indexed the backlog", () => mark(path) === topId(path));
}

/** A new file with the schema and an empty CJK index, on a connection closed when the test ends. */
function indexedConnection(t: TestContext, name: string): Connection {
  const db = openConnection(join(tempDir(t), name), { busyTimeoutMs: 1000 });
  t.after(() => db.close());
  ensureSchema(db, DEFAULT_RETRY);
  assert.equal(inWriteTransaction(db, () => createCjkIndex(db)), true);
  return db;
}

test("the daemon indexes CJK messages it commits (in a later group commit, or once idle) and serves CJK search from the index", async (t) => {
  const path = freshDbPath(t);
  const daemon = await startDaemon(t, path);
  const db = await daemon.open(t);
  await db.createSession("s", "cli");
  const zh = await db.appendMessage("s", { role: "user", content: "我们的数据库很快" });
  await db.appendMessage("s", { role: "user", content: "plain english only" });
  const ja = await db.appendMessage("s", { role: "assistant", content: "これはデータベースです" });
  const last = await db.appendMessage("s", { role: "user", content: "more english" });
  await indexed(path);
  assert.equal(mark(path), last, "the mark covers every committed message");
  assert.deepEqual(indexedIds(path), [zh, ja], "only messages with CJK are indexed");
  assert.deepEqual((await db.searchMessages("数据库很")).map((h) => h.id), [zh]);
  // Kept by catch-up alone: no trigger touches the index, so a writer whose SQLite has no trigram
  // tokenizer (the reference Python implementation's may not) writes the file as before.
  assert.deepEqual(rawAll(path, "SELECT name FROM sqlite_master WHERE type = 'trigger' AND sql LIKE '%messages_cjk%'"), []);
  assert.ok(rawAll(path, "SELECT name FROM sqlite_master WHERE type = 'trigger'").length > 0, "the schema's own FTS5 triggers are there");

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
  await indexed(path);
  assert.equal(indexedIds(path).length, count / 3);
  assert.equal((await db.searchMessages("号数据库记", { limit: 5000 })).length, count / 3);
});

/** The ids `searchMessages` returns, run in this process. */
function searchIds(db: Connection, query: string, page: Record<string, unknown>): number[] {
  const params = parseOperation("searchMessages", [query, page]);
  return (runOperation(db, "searchMessages", params) as Array<{ id: number }>).map((h) => h.id);
}

/** Only queries FTS5 finds nothing for reach the fallback (SPEC §3.1 step 4). */
function ftsFinds(db: Connection, query: string): boolean {
  try {
    return db.prepare("SELECT 1 FROM messages_fts WHERE messages_fts MATCH ?").get(sanitizeFtsQuery(query)) !== undefined;
  } catch {
    return false;
  }
}

/** A small deterministic generator, so a failure replays. */
function random(seed: number): () => number {
  let s = seed;
  return () => {
    s = (s * 1_103_515_245 + 12_345) % 2 ** 31;
    return s / 2 ** 31;
  };
}

test("under random appends, deletes, reused ids and partial catch-ups the index answers exactly as the LIKE scan", (t) => {
  const db = indexedConnection(t, "random.db");
  const rand = random(15);
  const alphabet = [..."数据库迁移会话笔记%_\\\"Ab"];
  const text = (n: number) => Array.from({ length: n }, () => alphabet[Math.floor(rand() * alphabet.length)]).join("");
  db.exec("INSERT INTO sessions (id, source, started_at) VALUES ('s', 'cli', 0)");
  const insert = db.prepare("INSERT INTO messages (id, session_id, role, content, timestamp) VALUES (?, 's', 'user', ?, ?)");
  const scan = (query: string) => {
    const raw = query.replace(/^[\s"]+|[\s"]+$/g, "");
    const pattern = `%${raw.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    return db
      .prepare("SELECT id FROM messages WHERE content LIKE ? ESCAPE '\\' ORDER BY timestamp DESC, id DESC")
      .pluck()
      .all(pattern) as number[];
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
      if (!/[\u4E00-\u9FFF]/u.test(query) || ftsFinds(db, query)) continue;
      const expected = scan(query);
      assert.deepEqual(searchIds(db, query, { limit: 10_000 }), expected, `round ${round}, query ${JSON.stringify(query)}`);
      if (expected.length > 0) compared++;
    }
  }
  assert.ok(compared >= 100, `only ${compared} queries with hits were compared`);
});

const ALPHABET = [..."数据库迁移会话笔记"];
const SOURCES = ["cli", "telegram", "api"];
const ROLES = ["user", "assistant", "tool"];
/** Where the messages' times start: a year ago, so "now" is well ahead of them. */
const T0 = Date.now() / 1000 - 365 * 86_400;
/** A time the indexer's clock has not reached: such messages are outliers. */
const FUTURE = 4_102_444_800;

/** Page shapes a search is asked for: small pages, offsets well past the first page, filters. */
const PAGES = [
  {},
  { limit: 1 },
  { limit: 3 },
  { limit: 4, offset: 7 },
  { limit: 2, offset: 25 },
  { limit: 5, offset: 60 },
  { roleFilter: ["tool"], limit: 4 },
  { sourceFilter: ["api"], limit: 5, offset: 3 },
  { excludeSources: ["cli"], limit: 3, offset: 2 },
  { sourceFilter: ["telegram"], roleFilter: ["user", "assistant"], limit: 6, offset: 4 },
];

test("through the daemon, indexed CJK search gives the LIKE scan's exact hits: out-of-order times, filters, offsets, short queries, a lagging index", async (t) => {
  const rand = random(4);
  const text = () => Array.from({ length: 6 + Math.floor(rand() * 14) }, () => ALPHABET[Math.floor(rand() * ALPHABET.length)]).join("");
  const path = freshDbPath(t);
  const setup = await openSessionDB({ path, mode: "direct" });
  for (let i = 0; i < 9; i++) await setup.createSession(`s${i}`, SOURCES[i % SOURCES.length]!);
  await setup.close();
  // Times mostly follow ids, with jitter, runs of equal times, old imports, a writer whose clock
  // is far ahead, and one timestamp that is not a number at all.
  const timeFor = (i: number): unknown => {
    const x = rand();
    if (x < 0.06) return T0 - 1_000_000 * rand();
    if (x < 0.09) return FUTURE + Math.floor(rand() * 100);
    if (x < 0.15) return T0 + Math.floor(i / 10) * 10;
    return T0 + i * 10 + (rand() - 0.5) * 400;
  };
  const insert = (raw: { prepare(sql: string): { run(...p: unknown[]): unknown } }, from: number, count: number) => {
    const stmt = raw.prepare("INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, ?, ?, ?)");
    for (let i = from; i < from + count; i++) {
      const content = rand() < 0.1 ? `english only ${i}` : text();
      // The text timestamp goes to a session that stays (an export refuses it).
      const odd = i === from + 5;
      stmt.run(odd ? "s0" : `s${Math.floor(rand() * 9)}`, ROLES[Math.floor(rand() * ROLES.length)], content, odd ? "soon" : timeFor(i));
    }
  };
  rawWrite(path, (raw) => insert(raw, 0, 700));

  const daemon = await startDaemon(t, path);
  const db = await daemon.open(t);
  await indexed(path);
  // A session deleted and imported back keeps its ids, all below the index's mark.
  const exported = await db.exportSession("s4");
  assert.ok(exported !== null && exported.messages.length > 0);
  await db.deleteSession("s4");
  const imported = await db.importSession(exported);
  assert.equal(imported.renumbered, false, "the export's ids were free again");
  // One more message through the daemon, and the wait until the index has it and the writer has
  // gone idle with nothing left to do: its idle checkpoint runs only once no catch-up or sweep of
  // the deletion is pending, so nothing moves the mark until the daemon's next write.
  await db.appendMessage("s0", { role: "user", content: "最后一条数据库消息" });
  const idleCheckpoints = async () => (await db.daemon!.stats()).writer.checkpoints.passive;
  const before = await idleCheckpoints();
  await waitUntil("the daemon idle with its index caught up", async () => (await idleCheckpoints()) > before && mark(path) === topId(path));
  // Then a plain writer (as the reference Python implementation would) appends behind the
  // daemon's back: the index does not have these until the daemon's next write.
  rawWrite(path, (raw) => insert(raw, 1000, 80));
  const lagging = mark(path)!;
  assert.ok(lagging < topId(path), "the index lags behind the file");

  // The oracle: a copy of the file without the index, which direct mode searches by the scan.
  const copy = join(tempDir(t), "scan.db");
  const reader = openConnection(path, { readonly: true, busyTimeoutMs: 5000 });
  try {
    reader.prepare("VACUUM INTO ?").run(copy);
  } finally {
    reader.close();
  }
  rawWrite(copy, (raw) => {
    for (const table of ["messages_cjk", "messages_cjk_state", "messages_cjk_bound", "messages_cjk_outliers"]) raw.exec(`DROP TABLE ${table}`);
  });
  const scan = await openSessionDB({ path: copy, mode: "direct" });
  t.after(() => scan.close());

  const queries = new Set<string>(["数", "据库", "数据库", "库迁移会", "笔记数据库迁移"]);
  while (queries.size < 30) queries.add(text().slice(0, 1 + Math.floor(rand() * 4)));
  let pages = 0;
  for (const query of queries) {
    for (const page of PAGES) {
      const expected: SearchHit[] = await scan.searchMessages(query, page);
      assert.deepEqual(await db.searchMessages(query, page), expected, `${query} ${JSON.stringify(page)}`);
      if (expected.length > 0 && (page.offset ?? 0) > 0) pages++;
    }
  }
  assert.ok(pages >= 60, `only ${pages} pages past the first had hits`);
  assert.equal(mark(path), lagging, "searching did not catch the index up: the lagging rows were found by the scan of the tail");
});

test("after a catch-up, the walk's early stop keeps the scan's page under random times, pages and filters", (t) => {
  const db = indexedConnection(t, "walk.db");
  const rand = random(27);
  const text = () => Array.from({ length: 3 + Math.floor(rand() * 10) }, () => ALPHABET[Math.floor(rand() * ALPHABET.length)]).join("");
  for (let i = 0; i < 6; i++) db.prepare("INSERT INTO sessions (id, source, started_at) VALUES (?, ?, 0)").run(`s${i}`, SOURCES[i % 3]);
  const insert = db.prepare("INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, ?, ?, ?)");
  const scan = (query: string, page: { limit?: number; offset?: number; roleFilter?: string[]; sourceFilter?: string[]; excludeSources?: string[] }) =>
    db
      .prepare(
        `SELECT m.id FROM messages m JOIN sessions s ON s.id = m.session_id
         WHERE m.content LIKE ? AND (? IS NULL OR m.role IN (SELECT value FROM json_each(?)))
           AND (? IS NULL OR s.source IN (SELECT value FROM json_each(?)))
           AND (? IS NULL OR s.source NOT IN (SELECT value FROM json_each(?)))
         ORDER BY m.timestamp DESC, m.id DESC LIMIT ? OFFSET ?`,
      )
      .pluck()
      .all(
        `%${query}%`,
        ...[page.roleFilter, page.sourceFilter, page.excludeSources].flatMap((f) => Array(2).fill(f === undefined ? null : JSON.stringify(f))),
        page.limit ?? 20,
        page.offset ?? 0,
      ) as number[];
  let clock = T0;
  let compared = 0;
  for (let round = 0; round < 120; round++) {
    const action = rand();
    if (action < 0.5) {
      // A burst of appends whose times run forward, backward (an import), in ties or ahead.
      const mode = rand();
      for (let i = 0; i < 25; i++) {
        const ts = mode < 0.55 ? (clock += rand() * 50) - rand() * 300 : mode < 0.75 ? T0 - rand() * 1e6 : mode < 0.9 ? clock : FUTURE + rand();
        insert.run(`s${Math.floor(rand() * 6)}`, ROLES[Math.floor(rand() * 3)], rand() < 0.1 ? "plain" : text(), ts);
      }
    } else if (action < 0.6) {
      db.exec("DELETE FROM messages WHERE id IN (SELECT id FROM messages ORDER BY random() LIMIT 8)");
    } else {
      inWriteTransaction(db, () => {
        catchUpCjkIndex(db, 1 + Math.floor(rand() * 300));
        if (rand() < 0.3) sweepCjkIndex(db);
      });
    }
    for (let q = 0; q < 10; q++) {
      const query = text().slice(0, 1 + Math.floor(rand() * 4));
      const page = PAGES[Math.floor(rand() * PAGES.length)]!;
      if (ftsFinds(db, query)) continue;
      const expected = scan(query, page);
      assert.deepEqual(searchIds(db, query, page), expected, `round ${round}, ${query} ${JSON.stringify(page)}`);
      if (expected.length > 0) compared++;
    }
  }
  assert.ok(compared >= 600, `only ${compared} searches with hits were compared`);
});

/**
 * Schema creation and migration (SPEC §1): files built by hand as older reference versions left
 * them are brought to schema 6 with their data intact, in one transaction, exactly once.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { test, type TestContext } from "node:test";
import { openSessionDB, SessionDBError, type SessionDB } from "../../src/index.js";
import { compiledFixture, gatePath, lastJsonLine, releaseTogether, runToSuccess, spawnNode, type Child } from "../helpers/processes.js";
import {
  buildLegacyFile, buildSpecFile, columnNames, columnsOf, LEGACY_ROWS, masterEntries, objectExists, schemaCookie,
  versionRows, withRaw,
} from "../helpers/sqlite-files.js";
import { tempDir } from "../helpers/temp-dir.js";
import type { WriterReport } from "../fixtures/direct-writer.js";

async function openDirect(t: TestContext, path: string): Promise<SessionDB> {
  const db = await openSessionDB({ path, mode: "direct" });
  t.after(() => db.close());
  return db;
}

/** The columns, indexes, FTS table and triggers of a file made from the SPEC §1 text. */
function specFacts(dir: string) {
  const path = join(dir, "spec-reference.db");
  buildSpecFile(path);
  return withRaw(path, (raw) => ({
    sessions: columnsOf(raw, "sessions"),
    messages: columnsOf(raw, "messages"),
    names: masterEntries(raw).map((e) => `${e.type} ${e.name}`),
    master: masterEntries(raw),
  }));
}

/** Asserts the file is at schema 6 with every object and column of SPEC §1, each exactly once. */
function assertSpecSchema(path: string, spec: ReturnType<typeof specFacts>): void {
  withRaw(path, (raw) => {
    assert.deepEqual(versionRows(raw), [6]);
    assert.deepEqual(columnsOf(raw, "sessions"), spec.sessions);
    assert.deepEqual(columnsOf(raw, "messages"), spec.messages);
    for (const table of ["sessions", "messages"]) {
      const names = columnNames(raw, table);
      assert.equal(new Set(names).size, names.length, `a column of ${table} is there twice`);
    }
    assert.deepEqual(masterEntries(raw).map((e) => `${e.type} ${e.name}`), spec.names);
    assert.equal(raw.pragma("integrity_check", { simple: true }), "ok");
  });
}

/** The seeded legacy rows, read back through the public API. */
async function assertLegacyData(db: SessionDB, version: number): Promise<void> {
  const { parent, child, messages } = LEGACY_ROWS;
  const p = await db.getSession(parent.id);
  assert.ok(p);
  assert.equal(p.source, parent.source);
  assert.equal(p.model, parent.model);
  assert.equal(p.started_at, parent.started_at);
  assert.equal(p.end_reason, "user_exit");
  assert.equal(p.message_count, 3);
  assert.equal(p.tool_call_count, 1);
  assert.equal(p.input_tokens, parent.input_tokens);
  assert.equal(p.output_tokens, parent.output_tokens);
  assert.equal(p.title, null);
  assert.equal(p.cache_read_tokens, 0, "an added INTEGER DEFAULT 0 column reads 0 on old rows");
  assert.equal(p.reasoning_tokens, 0);
  assert.equal(p.billing_provider, null);
  assert.equal(p.estimated_cost_usd, null);

  const c = await db.getSession(child.id);
  assert.equal(c?.parent_session_id, parent.id);

  const stored = await db.getMessages(parent.id);
  const expected = messages.filter((m) => m.session_id === parent.id);
  assert.deepEqual(stored.map((m) => m.content), expected.map((m) => m.content));
  assert.deepEqual(stored.map((m) => m.timestamp), expected.map((m) => m.timestamp));
  assert.deepEqual(stored[1]?.tool_calls, [{ id: "call_1", type: "function" }]);
  assert.equal(stored[1]?.finish_reason, version >= 2 ? "tool_calls" : null);
  assert.ok(stored.every((m) => m.reasoning === null && m.reasoning_details === null && m.codex_reasoning_items === null));

  const listed = await db.listSessionsRich();
  assert.deepEqual(listed.map((s) => s.id), [parent.id], "the child is hidden, the root listed");
  assert.equal(listed[0]?.preview, "hello from the legacy kumquat era");
  assert.equal(listed[0]?.last_active, 1_600_000_003);

  const quokka = await db.searchMessages("quokka");
  assert.deepEqual(quokka.map((h) => [h.session_id, h.role]), [[parent.id, "assistant"]]);
  const axolotl = await db.searchMessages("axolotls");
  assert.deepEqual(axolotl.map((h) => h.session_id), [child.id]);
  assert.equal(await db.messageCount(), 4);
}

/** A migrated file takes new writes like a fresh one. */
async function assertWritable(db: SessionDB): Promise<void> {
  const { parent } = LEGACY_ROWS;
  const id = await db.appendMessage(parent.id, { role: "assistant", content: "a new pangolin fact", reasoning: "thought", finishReason: "stop" });
  assert.ok(id > 4, "AUTOINCREMENT continues after the old ids");
  assert.equal((await db.getSession(parent.id))?.message_count, 4);
  assert.deepEqual((await db.searchMessages("pangolin")).map((h) => h.id), [id]);
  assert.equal(await db.setSessionTitle(parent.id, "Old work"), true);
  assert.equal(await db.resolveSessionByTitle("Old work"), parent.id);
}

// The reference migrates step by step outside a transaction, so a crash can leave columns of a
// later version in a file whose version row was never raised: each step must skip what exists.
const HALF_MIGRATED = "ALTER TABLE sessions ADD COLUMN title TEXT; ALTER TABLE sessions ADD COLUMN cache_read_tokens INTEGER DEFAULT 0;";

const LEGACY_CASES: ReadonlyArray<{ name: string; version: number; fts: boolean; extraSql?: string }> = [
  { name: "v1 file with FTS", version: 1, fts: true },
  { name: "v1 file without an FTS table", version: 1, fts: false },
  { name: "v2 file", version: 2, fts: true },
  { name: "half-migrated v2 file (a crash after two v3/v5 columns were added)", version: 2, fts: true, extraSql: HALF_MIGRATED },
  { name: "v5 file", version: 5, fts: true },
];

for (const legacy of LEGACY_CASES) {
  test(`a ${legacy.name} is migrated to schema 6 with its data intact`, async (t) => {
    const dir = tempDir(t);
    const spec = specFacts(dir);
    const path = join(dir, "state.db");
    buildLegacyFile(path, legacy.version, { fts: legacy.fts, extraSql: legacy.extraSql });
    withRaw(path, (raw) => {
      assert.equal(objectExists(raw, "messages_fts"), legacy.fts);
      assert.equal(objectExists(raw, "idx_sessions_title_unique"), legacy.version >= 4);
      assert.equal(columnNames(raw, "messages").length, legacy.version >= 2 ? 10 : 9, "no finish_reason before v2, no v6 columns");
      assert.equal(columnNames(raw, "sessions").includes("pricing_version"), legacy.version >= 5);
    });

    const db = await openDirect(t, path);
    assertSpecSchema(path, spec);
    await assertLegacyData(db, legacy.version);
    await assertWritable(db);
  });
}

test("a fresh file gets exactly the SPEC §1 schema and version 6", async (t) => {
  const dir = tempDir(t);
  const spec = specFacts(dir);
  const path = join(dir, "fresh.db");
  const db = await openDirect(t, path);
  await db.close();
  withRaw(path, (raw) => {
    assert.deepEqual(masterEntries(raw), spec.master, "same objects with the same SQL text as the SPEC");
    assert.deepEqual(versionRows(raw), [6]);
    assert.equal(raw.pragma("journal_mode", { simple: true }), "wal");
  });

  const again = await openDirect(t, path);
  await again.close();
  withRaw(path, (raw) => assert.deepEqual(versionRows(raw), [6], "reopening adds no second version row"));
});

test("a file of a newer version (7) is opened read-only, without being migrated", async (t) => {
  const dir = tempDir(t);
  const path = join(dir, "future.db");
  buildSpecFile(path, 7);
  // Without its title index, a v7 file is one a migration would change: nothing may touch it.
  withRaw(path, (raw) => raw.exec("DROP INDEX idx_sessions_title_unique"));
  const before = withRaw(path, (raw) => ({ cookie: schemaCookie(raw), master: masterEntries(raw) }));

  const db = await openDirect(t, path);
  assert.equal(await db.sessionCount(), 0, "reads work");
  await assert.rejects(db.createSession("s-future", "cli"), (err: unknown) => err instanceof SessionDBError && err.code === "SCHEMA");
  await db.close();

  withRaw(path, (raw) => {
    assert.deepEqual(versionRows(raw), [7]);
    assert.equal(schemaCookie(raw), before.cookie, "no DDL ran");
    assert.deepEqual(masterEntries(raw), before.master);
    assert.equal(objectExists(raw, "idx_sessions_title_unique"), false);
  });
});

test("duplicate titles in a v3 file fail with SCHEMA, naming them, and leave the file at v3", async (t) => {
  const dir = tempDir(t);
  const path = join(dir, "legacy-v3.db");
  buildLegacyFile(path, 3, {
    titles: { "old-parent": "Same title", "dup-a": "Same title", "dup-b": "Other twin", "dup-c": "Other twin", "old-child": "unique" },
  });
  const before = withRaw(path, (raw) => ({ cookie: schemaCookie(raw), master: masterEntries(raw), sessions: columnNames(raw, "sessions"), messages: columnNames(raw, "messages") }));

  for (let attempt = 0; attempt < 2; attempt++) {
    await assert.rejects(openSessionDB({ path, mode: "direct" }), (err: unknown) => {
      assert.ok(err instanceof SessionDBError);
      assert.equal(err.code, "SCHEMA");
      assert.match(err.message, /Same title/);
      assert.match(err.message, /Other twin/);
      return true;
    });
    withRaw(path, (raw) => {
      assert.deepEqual(versionRows(raw), [3], "the version row is untouched");
      assert.equal(schemaCookie(raw), before.cookie, "all or nothing: not one column was added");
      assert.deepEqual(masterEntries(raw), before.master);
      assert.deepEqual(columnNames(raw, "sessions"), before.sessions);
      assert.deepEqual(columnNames(raw, "messages"), before.messages);
    });
  }

  // Once a person renames the duplicates, the same file migrates.
  withRaw(path, (raw) => raw.exec("UPDATE sessions SET title = title || ' (' || id || ')' WHERE id IN ('dup-a', 'dup-c')"));
  const db = await openDirect(t, path);
  assert.equal(await db.getSessionTitle("old-parent"), "Same title");
  assert.equal(await db.resolveSessionByTitle("Other twin"), "dup-b");
  withRaw(path, (raw) => {
    assert.deepEqual(versionRows(raw), [6]);
    assert.ok(objectExists(raw, "idx_sessions_title_unique"));
  });
});

const RACE_CASES = [
  { name: "an old v1 file without FTS, never in WAL mode", build: (p: string) => buildLegacyFile(p, 1, { fts: false, journalMode: "delete" }) },
  { name: "an old v1 WAL file", build: (p: string) => buildLegacyFile(p, 1, { fts: true }) },
  { name: "a file that does not exist yet", build: (_: string) => undefined },
] as const;
const RACERS = 4;

for (const race of RACE_CASES) {
  test(`${RACERS} processes opening ${race.name} at the same instant migrate it exactly once`, async (t) => {
    const dir = tempDir(t);
    const spec = specFacts(dir);
    // The same file migrated by one process alone: its schema cookie counts the DDL of one migration.
    const alonePath = join(dir, "alone.db");
    race.build(alonePath);
    await (await openSessionDB({ path: alonePath, mode: "direct" })).close();
    const aloneCookie = withRaw(alonePath, schemaCookie);

    const path = join(dir, "raced.db");
    race.build(path);
    const gate = gatePath(dir);
    const children: Child[] = [];
    t.after(() => children.forEach((c) => c.kill()));
    for (let i = 0; i < RACERS; i++) children.push(spawnNode(compiledFixture("direct-writer"), [JSON.stringify({ db: path, gate })]));
    await releaseTogether(children, gate);
    const results = await Promise.all(children.map((c) => c.done));
    for (const result of results) {
      assert.equal(result.code, 0, result.stdout + result.stderr);
      assert.deepEqual(lastJsonLine<WriterReport>(result), { ok: true, appended: [] });
    }

    assertSpecSchema(path, spec);
    withRaw(path, (raw) => assert.equal(schemaCookie(raw), aloneCookie, "the schema changed as often as in one migration"));
    const db = await openDirect(t, path);
    if (race.name.startsWith("an old")) await assertLegacyData(db, 1);
    else assert.equal(await db.sessionCount(), 0);
  });
}

test("a session written after a concurrent migration is visible to every process", async (t) => {
  const dir = tempDir(t);
  const path = join(dir, "state.db");
  buildLegacyFile(path, 2, { fts: false });
  const gate = gatePath(dir);
  const children = ["w1", "w2"].map((id) =>
    spawnNode(compiledFixture("direct-writer"), [JSON.stringify({ db: path, gate, ownSession: id, appends: 5, word: "migrated" })]),
  );
  t.after(() => children.forEach((c) => c.kill()));
  await releaseTogether(children, gate);
  for (const child of children) assert.equal(lastJsonLine<WriterReport>(await runToSuccess(child)).ok, true);

  const db = await openDirect(t, path);
  assert.equal(await db.messageCount(), 4 + 10);
  assert.equal((await db.searchMessages("migrated", { limit: 50 })).length, 10);
  assert.equal((await db.searchMessages("kumquat")).length, 1, "old messages were back-filled into the new FTS table");
});

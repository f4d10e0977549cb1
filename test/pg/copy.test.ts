/** `sessiondb copy` between SQLite and PostgreSQL, both ways: everything arrives, re-runs skip, counts verified. */
import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import type { CopyReport } from "../../src/cli/commands/copy.js";
import { openSessionDB, type SessionDB, type SessionExport } from "../../src/index.js";
import { runCli, runJson } from "../helpers/cli.js";
import { usePgServer } from "../helpers/postgres.js";
import { tempDir } from "../helpers/temp-dir.js";

const server = usePgServer();

async function everything(db: SessionDB): Promise<SessionExport[]> {
  const all: SessionExport[] = [];
  for await (const s of db.exportAll()) all.push(s);
  return all.sort((a, b) => a.id.localeCompare(b.id));
}

async function withStore<T>(path: string, fn: (db: SessionDB) => Promise<T>): Promise<T> {
  const db = await openSessionDB({ path, mode: "direct" });
  try {
    return await fn(db);
  } finally {
    await db.close();
  }
}

/** A store with a parent chain (children newer than parents, so they come first in an export), titles, tools. */
async function seed(db: SessionDB): Promise<void> {
  for (let i = 0; i < 30; i++) {
    await db.createSession(`s${i}`, i % 3 === 0 ? "telegram" : "cli", {
      model: "m", ...(i > 0 && i % 4 === 0 ? { parentSessionId: `s${i - 1}` } : {}),
    });
    for (let j = 0; j < (i % 5) + 1; j++) {
      await db.appendMessage(`s${i}`, { role: j % 2 === 0 ? "user" : "assistant", content: `session ${i} message ${j} 数据库`, toolCalls: j === 1 ? [{ id: "t" }] : undefined });
    }
    if (i % 7 === 0) await db.setSessionTitle(`s${i}`, `title ${i}`);
    await db.updateTokenCounts(`s${i}`, { inputTokens: i, estimatedCostUsd: i / 100 });
  }
  await db.endSession("s3", "compression");
}

test("SQLite → PostgreSQL → SQLite: every session and message arrives as it was; a re-run skips them all", async (t) => {
  const dir = tempDir(t);
  const sqlite = join(dir, "state.db");
  const url = server.fresh(t);
  await withStore(sqlite, seed);
  const original = await withStore(sqlite, everything);

  const there = await runJson<CopyReport>(sqlite, ["copy", "--from", sqlite, "--to", url]);
  assert.deepEqual({ ...there, from: undefined, to: undefined }, {
    from: undefined, to: undefined, sessions: 30, copied: 30, skipped: 0, messages: original.reduce((n, s) => n + s.messages.length, 0), verified: true,
  });
  assert.deepEqual(await withStore(url, everything), original, "PostgreSQL holds exactly what the file held");
  assert.equal((await withStore(url, (db) => db.searchMessages("数据库", { limit: 100 }))).length > 0, true, "and it is searchable");

  const again = await runJson<CopyReport>(sqlite, ["copy", "--from", sqlite, "--to", url]);
  assert.equal(again.copied, 0);
  assert.equal(again.skipped, 30);

  const back = join(dir, "back.db");
  const home = await runJson<CopyReport>(sqlite, ["copy", "--from", url, "--to", back]);
  assert.equal(home.copied, 30);
  assert.deepEqual(await withStore(back, everything), original, "and back again, unchanged");
});

test("an interrupted copy is finished by running it again: what is there is skipped, the rest copied", async (t) => {
  const dir = tempDir(t);
  const sqlite = join(dir, "state.db");
  const url = server.fresh(t);
  await withStore(sqlite, seed);
  // What a first run that stopped half-way left: some of the sessions.
  const firstHalf = (await withStore(sqlite, everything)).filter((s) => s.parent_session_id === null).slice(0, 10);
  await withStore(url, async (db) => {
    for (const s of firstHalf) await db.importSession(s);
  });
  const report = await runJson<CopyReport>(sqlite, ["copy", "--from", sqlite, "--to", url]);
  assert.equal(report.skipped, 10);
  assert.equal(report.copied, 20);
  assert.deepEqual(await withStore(url, everything), await withStore(sqlite, everything));
});

test("copy refuses a missing source and the same database on both sides", async (t) => {
  const dir = tempDir(t);
  const missing = join(dir, "missing.db");
  const result = await runCli(missing, ["copy", "--from", missing, "--to", server.fresh(t)]);
  assert.equal(result.code, 1);
  assert.match(result.stderr, /no database at/);
  const url = server.fresh(t);
  const same = await runCli(missing, ["copy", "--from", url, "--to", url.replace("user=postgres", "user=postgres&application_name=x")]);
  assert.equal(same.code, 1);
  assert.match(same.stderr, /same database/);
});

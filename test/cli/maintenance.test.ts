/**
 * `sessiondb backup`, `verify`, `check` and `optimize` on real files, directly and through a real
 * daemon while clients write: the backup is a checked copy the reference opens and writes, a
 * damaged index is found, the merge and VACUUM work and VACUUM waits for --force beside others.
 */
import assert from "node:assert/strict";
import { existsSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { openSessionDB, type SessionDB } from "../../src/index.js";
import { assertFails, runCli, runJson, seedDatabase, ServeProcess } from "../helpers/cli.js";
import { lastJsonLine, runToSuccess, sourceFixture, spawnPython } from "../helpers/processes.js";
import { rawGet, rawWrite } from "../helpers/raw-db.js";
import { tempDir } from "../helpers/temp-dir.js";

const REFERENCE = sourceFixture("hermes_writer.py");

interface BackupReport { file: string; bytes: number; pages: number; sessions: number; messages: number; integrity: string; via: string }
interface CheckReport { ok: boolean; quick: boolean; ftsContent: boolean; problems: string[]; fts: { present: boolean; ok: boolean; problems: string[] }; cjk: { present: boolean; ok: boolean }; sessions: number; messages: number; via: string }
interface OptimizeReport { indexes: string[]; steps: number; vacuumed: boolean; bytesBefore: number; bytesAfter: number; bytesReturned: number; via: string }

/** A file of some megabytes (a backup of it takes many steps): `sessions` sessions of 40 messages of ~1 KB. */
async function bigDatabase(path: string, sessions: number): Promise<void> {
  await seedDatabase(path);
  rawWrite(path, (db) => {
    const session = db.prepare("INSERT INTO sessions (id, source, started_at) VALUES (?, 'bulk', ?)");
    const message = db.prepare("INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, 'user', ?, ?)");
    for (let s = 0; s < sessions; s++) {
      session.run(`bulk-${s}`, 1_700_000_000 + s);
      for (let m = 0; m < 40; m++) message.run(`bulk-${s}`, `bulk message ${s} ${m} ${"lorem ipsum dolor ".repeat(55)}`, 1_700_000_000 + s + m / 100);
    }
  });
}

function counts(path: string): { sessions: number; messages: number } {
  return {
    sessions: rawGet<{ n: number }>(path, "SELECT count(*) AS n FROM sessions")!.n,
    messages: rawGet<{ n: number }>(path, "SELECT count(*) AS n FROM messages")!.n,
  };
}

/** Writers appending through the daemon until `stop` resolves; how many appends they made. */
function appendUntil(db: SessionDB, writers: number, stop: Promise<unknown>): Promise<number> {
  let done = false;
  void stop.finally(() => (done = true));
  return Promise.all(
    Array.from({ length: writers }, async (_, w) => {
      const session = `writer-${w}`;
      await db.ensureSession(session, "load");
      let n = 0;
      while (!done) {
        await db.appendMessage(session, { role: "assistant", content: `during the backup ${w} ${n}` });
        n++;
      }
      return n;
    }),
  ).then((ns) => ns.reduce((a, b) => a + b, 0));
}

test("backup directly: a checked copy renamed into place, with no temporary file left; the reference opens and writes it", async (t) => {
  const dir = tempDir(t);
  const db = join(dir, "state.db");
  await bigDatabase(db, 20);
  const report = await runJson<BackupReport>(db, ["backup", join(dir, "backup.db")]);
  assert.equal(report.via, "direct");
  assert.equal(report.integrity, "ok");
  assert.deepEqual({ sessions: report.sessions, messages: report.messages }, counts(db));
  assert.deepEqual(readdirSync(dir).filter((f) => f.startsWith(".")), [], "no temporary file is left");

  // A directory as DEST: the backup takes the database's name there.
  const into = join(dir, "into");
  (await import("node:fs")).mkdirSync(into);
  assert.equal((await runJson<BackupReport>(db, ["backup", into])).file, join(into, "state.db"));

  // The restore: the reference implementation opens the copy, finds every message, and writes to it.
  const restored = join(dir, "backup.db");
  const dump = lastJsonLine<{ integrity: string; realCounts: Record<string, number>; fts: Record<string, number> }>(
    await runToSuccess(spawnPython(REFERENCE, ["dump", restored, "lorem"])),
  );
  assert.equal(dump.integrity, "ok");
  assert.equal(Object.values(dump.realCounts).reduce((a, b) => a + b, 0), report.messages);
  assert.equal(dump.fts.lorem, 20 * 40);
  await runToSuccess(spawnPython(REFERENCE, ["write", JSON.stringify({ db: restored, session: "after-restore", source: "python-hermes", count: 3, word: "restored" })]));
  assert.equal(counts(restored).messages, report.messages + 3);
  assert.equal((await runJson<CheckReport>(restored, ["check"])).ok, true);
});

test("backup through the daemon while clients append: the copy is one snapshot, checked, and the writes all land", async (t) => {
  const dir = tempDir(t);
  const db = join(dir, "state.db");
  await bigDatabase(db, 60);
  const daemon = await ServeProcess.start(db);
  t.after(() => daemon.stop());
  const client = await openSessionDB({ path: db, mode: "daemon" });
  t.after(() => client.close());
  const before = await client.messageCount();
  const backup = runJson<BackupReport>(db, ["backup", join(dir, "backup.db")]);
  const appended = await appendUntil(client, 4, backup);
  const report = await backup;
  assert.equal(report.via, "daemon");
  assert.ok(report.messages >= before && report.messages <= before + appended, `the copy holds one snapshot: ${before} ≤ ${report.messages} ≤ ${before + appended}`);
  assert.equal(await client.messageCount(), before + appended, "every acknowledged append is in the database");
  const copy = await runJson<CheckReport>(join(dir, "backup.db"), ["verify", join(dir, "backup.db")]);
  assert.equal(copy.ok, true);
  assert.equal(copy.messages, report.messages);
  assert.deepEqual(readdirSync(dir).filter((f) => f.includes(".partial")), []);
});

test("backup refuses the database itself as DEST, and leaves DEST alone when it cannot be made", async (t) => {
  const dir = tempDir(t);
  const db = join(dir, "state.db");
  await seedDatabase(db);
  assertFails(await runCli(db, ["backup", db]), 1, "error INVALID_ARGUMENT:");
  assertFails(await runCli(db, ["backup", join(dir, "missing-dir", "b.db")]), 1, "error IO:");
  assert.equal(counts(db).sessions > 0, true);
});

test("verify: a damaged copy and a file that is not a Hermes database fail with exit 1", async (t) => {
  const dir = tempDir(t);
  const db = join(dir, "state.db");
  await bigDatabase(db, 10);
  const copy = join(dir, "copy.db");
  await runJson(db, ["backup", copy]);
  const ok = await runJson<CheckReport>(copy, ["verify", copy]);
  assert.equal(ok.ok, true);
  assert.deepEqual(readdirSync(dir).filter((f) => f.startsWith("copy.db-")), [], "verify leaves no -wal or -shm beside the copy");

  // Zeroes over a page in the middle of the copy: a torn write, a bad disk.
  const { openSync, writeSync, closeSync } = await import("node:fs");
  const fd = openSync(copy, "r+");
  writeSync(fd, Buffer.alloc(4096, 0x55), 0, 4096, 4096 * 40);
  closeSync(fd);
  const damaged = await runCli(copy, ["--json", "verify", copy]);
  assertFails(damaged, 1, "error CORRUPT:");
  assert.equal((JSON.parse(damaged.stdout) as CheckReport).ok, false);

  const text = join(dir, "notes.txt");
  writeFileSync(text, "not a database\n");
  assertFails(await runCli(db, ["verify", text]), 1, "error SCHEMA:");
});

test("check finds a full-text index that no longer matches the messages (not --quick); directly and on a daemon's reader", async (t) => {
  const dir = tempDir(t);
  const db = join(dir, "state.db");
  await bigDatabase(db, 5);
  assert.equal((await runJson<CheckReport>(db, ["check"])).ok, true);
  // A writer that bypassed the triggers: the index still has the old words of a message.
  rawWrite(db, (raw) => {
    raw.exec("DROP TRIGGER messages_fts_update");
    raw.prepare("UPDATE messages SET content = 'rewritten behind the index' WHERE id = (SELECT max(id) FROM messages)").run();
  });
  rawWrite(db, (raw) =>
    raw.exec(`CREATE TRIGGER messages_fts_update AFTER UPDATE ON messages BEGIN
    INSERT INTO messages_fts(messages_fts, rowid, content) VALUES('delete', old.id, old.content);
    INSERT INTO messages_fts(rowid, content) VALUES (new.id, new.content);
END`),
  );
  const direct = await runCli(db, ["--json", "check"]);
  assertFails(direct, 1, "error CORRUPT:");
  const report = JSON.parse(direct.stdout) as CheckReport;
  assert.equal(report.fts.ok, false);
  assert.match(report.fts.problems.join(" "), /does not match the messages/);
  assert.equal((await runJson<CheckReport>(db, ["check", "--quick"])).ok, true, "the quick check looks at the structure only");

  const daemon = await ServeProcess.start(db);
  t.after(() => daemon.stop());
  const viaDaemon = await runCli(db, ["--json", "check"]);
  assertFails(viaDaemon, 1, "error CORRUPT:");
  const served = JSON.parse(viaDaemon.stdout) as CheckReport;
  assert.equal(served.via, "daemon");
  assert.equal(served.fts.ok, false);
  assert.equal(served.cjk.present, true, "the daemon made the CJK index, and checks it");
  assert.equal(served.cjk.ok, true);
});

test("optimize merges the indexes; --vacuum returns deleted rows' space, and is refused beside other clients unless --force", async (t) => {
  const dir = tempDir(t);
  const db = join(dir, "state.db");
  await bigDatabase(db, 40);
  rawWrite(db, (raw) => {
    raw.prepare("DELETE FROM messages WHERE session_id LIKE 'bulk-%' AND session_id NOT IN ('bulk-1', 'bulk-2')").run();
    raw.prepare("DELETE FROM sessions WHERE id LIKE 'bulk-%' AND id NOT IN ('bulk-1', 'bulk-2')").run();
  });
  const direct = await runJson<OptimizeReport>(db, ["optimize"]);
  assert.equal(direct.via, "direct");
  assert.deepEqual(direct.indexes, ["messages_fts"]);
  assert.equal(direct.vacuumed, false);

  const daemon = await ServeProcess.start(db);
  t.after(() => daemon.stop());
  const other = await openSessionDB({ path: db, mode: "daemon" });
  const merged = await runJson<OptimizeReport>(db, ["optimize"]);
  assert.equal(merged.via, "daemon");
  assert.deepEqual(merged.indexes, ["messages_fts", "messages_cjk"]);
  const refused = await runCli(db, ["optimize", "--vacuum"]);
  assertFails(refused, 1, "error BUSY:");
  assert.match(refused.stderr, /1 other client is connected/);
  const forced = await runJson<OptimizeReport>(db, ["optimize", "--vacuum", "--force"]);
  assert.equal(forced.vacuumed, true);
  assert.ok(forced.bytesReturned > 1024 * 1024, `the deleted messages' space went back to the disk: ${forced.bytesReturned} bytes`);
  assert.equal(await other.messageCount(), counts(db).messages, "the other client goes on");
  await other.close();
  assert.equal((await runJson<CheckReport>(db, ["check"])).ok, true);
  assert.ok(existsSync(db));
});

/**
 * Exports are snapshots (issue 23 item 3), while other processes append: through the daemon,
 * directly beside it, and on PostgreSQL. Every exported session's counters match its exported
 * messages, and the exported messages are exactly those committed before some moment: here
 * (appends only, ids given in commit order) every id up to the highest exported one, and none
 * above it.
 */
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { test, type TestContext } from "node:test";
import { openSessionDB, SessionDBError, type OpenOptions, type SessionDB } from "../../src/index.js";
import { toolCallsOf } from "../contract/export-contract.js";
import { daemonStats, shortTempDir } from "../helpers/daemon.js";
import { waitUntil } from "../helpers/wait-until.js";
import { usePgServer } from "../helpers/postgres.js";
import { rawAll, rawWrite } from "../helpers/raw-db.js";
import { loadReport, serve, spawnLoad } from "./harness.js";

const SESSIONS = 600;
const EXPORTS = 3;
/** The appenders write to the oldest sessions: the last page of every export. */
const TARGETS = ["seed-000", "seed-001"];
const pg = usePgServer();

function seed(dbPath: string): void {
  rawWrite(dbPath, (raw) => {
    const session = raw.prepare("INSERT INTO sessions (id, source, started_at, message_count) VALUES (?, 'cli', ?, 1)");
    const message = raw.prepare("INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, 'user', ?, ?)");
    for (let i = 0; i < SESSIONS; i++) {
      const id = `seed-${String(i).padStart(3, "0")}`;
      session.run(id, 1_700_000_000 + i);
      message.run(id, `${id} `.padEnd(2000, "x"), 1_700_000_000 + i);
    }
  });
}

/** Exports while the appenders run; checks each export as it is read, and the ids once they stop. */
async function exportWhileAppending(
  t: TestContext,
  dbPath: string,
  exporter: SessionDB,
  mode: NonNullable<OpenOptions["mode"]>,
  { socket, targets = TARGETS }: { socket?: string; targets?: readonly string[] } = {},
): Promise<void> {
  const stopFile = join(shortTempDir(t), "stop");
  const appenders = targets.map((session, i) =>
    spawnLoad(t, { db: dbPath, mode, session, tag: `appender${i}`, pipeline: 2, stopFile, report: "counts", ...(socket !== undefined ? { socket } : {}) }),
  );
  await Promise.all(appenders.map((child) => child.waitForLine("acked")));
  const exportedIds: Array<Set<number>> = [];
  for (let round = 0; round < EXPORTS; round++) {
    const ids = new Set<number>();
    let sessions = 0;
    for await (const session of exporter.exportAll()) {
      sessions++;
      assert.equal(session.messages.length, session.message_count, `${session.id}: message_count against its exported messages`);
      assert.equal(toolCallsOf(session.messages), session.tool_call_count, `${session.id}: tool_call_count`);
      for (const m of session.messages) ids.add(Number(m.id));
    }
    assert.equal(sessions, SESSIONS);
    exportedIds.push(ids);
  }
  writeFileSync(stopFile, "");
  const reports = await Promise.all(appenders.map((child) => loadReport(child)));
  const appended = reports.reduce((n, r) => n + r.ackCount, 0);
  const all = rawAll<{ id: number }>(dbPath, "SELECT id FROM messages ORDER BY id").map((r) => Number(r.id));
  for (const [round, ids] of exportedIds.entries()) {
    const highest = Math.max(...ids);
    const before = all.filter((id) => id <= highest);
    const missing = before.filter((id) => !ids.has(id));
    assert.deepEqual(missing.slice(0, 10), [], `export ${round}: messages committed before its latest one are missing (${missing.length})`);
    assert.equal(ids.size, before.length, `export ${round}: it holds messages committed after it began`);
  }
  t.diagnostic(`${appended} appends acknowledged during ${EXPORTS} exports; exported ${exportedIds.map((s) => s.size).join(", ")} messages`);
}

test("exports through the daemon while other processes append through it: one snapshot each", async (t) => {
  const dbPath = join(shortTempDir(t), "state.db");
  const daemon = await serve(t, dbPath, { readers: 2 });
  seed(dbPath);
  const exporter = await openSessionDB({ path: dbPath, mode: "daemon", socketPath: daemon.socketPath });
  t.after(() => exporter.close());
  await exportWhileAppending(t, dbPath, exporter, "daemon", { socket: daemon.socketPath });
});

test("exports in direct mode while other processes append directly: one snapshot each", async (t) => {
  const dbPath = join(shortTempDir(t), "state.db");
  const init = await openSessionDB({ path: dbPath, mode: "direct" });
  await init.close();
  seed(dbPath);
  const exporter = await openSessionDB({ path: dbPath, mode: "direct" });
  t.after(() => exporter.close());
  await exportWhileAppending(t, dbPath, exporter, "direct");
});

test("exports on PostgreSQL while another process appends: one REPEATABLE READ snapshot each", async (t) => {
  const url = pg.fresh(t);
  const exporter = await openSessionDB({ path: url, mode: "direct" });
  t.after(() => exporter.close());
  seed(url);
  // One appending process: a sequence hands out ids as statements run, not as they commit, so
  // only one writer's ids are in commit order.
  await exportWhileAppending(t, url, exporter, "direct", { targets: TARGETS.slice(0, 1) });
});

test("an export whose snapshot holds the WAL past the daemon's --wal-limit-mb is ended with TIMEOUT, and the WAL is checkpointed", async (t) => {
  const dbPath = join(shortTempDir(t), "state.db");
  const daemon = await serve(t, dbPath, { readers: 1, walLimitMb: 1 });
  // 3,000 sessions of 2,500 bytes: far more than the socket's buffers and the client's held pages.
  rawWrite(dbPath, (raw) => {
    const session = raw.prepare("INSERT INTO sessions (id, source, started_at, message_count) VALUES (?, 'cli', ?, 1)");
    const message = raw.prepare("INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, 'user', ?, ?)");
    for (let i = 0; i < 3000; i++) {
      session.run(`big-${i}`, 1_700_000_000 + i);
      message.run(`big-${i}`, "x".repeat(2500), 1_700_000_000 + i);
    }
  });
  const exporter = await openSessionDB({ path: dbPath, mode: "daemon", socketPath: daemon.socketPath });
  const writer = await openSessionDB({ path: dbPath, mode: "daemon", socketPath: daemon.socketPath });
  t.after(() => Promise.all([exporter.close(), writer.close()]));
  await writer.createSession("w", "cli");
  const stream = exporter.exportAll()[Symbol.asyncIterator]();
  assert.equal((await stream.next()).done, false, "the export has begun");
  // 3 MiB of writes while the export holds its snapshot: the WAL passes the 1 MiB limit.
  for (let i = 0; i < 30; i++) await writer.appendMessage("w", { role: "user", content: `${i} `.padEnd(100_000, "y") });
  await waitUntil("the daemon ended the export and emptied the WAL", async () => (await daemonStats(writer)).walBytes < 1024 * 1024);
  let ended: unknown = null;
  try {
    for (let next = await stream.next(); !next.done; next = await stream.next()) {
      // What was already sent is read to the end; then the export's failure.
    }
  } catch (err) {
    ended = err;
  }
  assert.ok(ended instanceof SessionDBError, `the export was ended: ${String(ended)}`);
  assert.equal(ended.code, "TIMEOUT");
  assert.match(ended.message, /held back checkpoints/);
});

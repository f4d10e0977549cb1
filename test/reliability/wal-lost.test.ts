/**
 * A `-wal` removed or truncated under a running daemon (issue 23 item 6): the writer notices
 * before its next COMMIT (it holds descriptors on the `-wal` and `-shm`), answers UNAVAILABLE
 * (not applied), says why and exits non-zero; no acknowledged write is lost, even when the daemon
 * is killed with SIGKILL at once, and the file is whole.
 */
import assert from "node:assert/strict";
import { closeSync, openSync, readSync, truncateSync, unlinkSync } from "node:fs";
import { join } from "node:path";
import { test, type TestContext } from "node:test";
import { openSessionDB, SessionDBError, type SessionDB } from "../../src/index.js";
import { shortTempDir } from "../helpers/daemon.js";
import { rawAll } from "../helpers/raw-db.js";
import { waitUntil } from "../helpers/wait-until.js";
import { checkFile, serve } from "./harness.js";

const BEFORE = 30;
const AFTER = 20;
/** A bound on a hang, not a timing: generous for a saturated machine. */
const EXIT_LIMIT_MS = 120_000;

/** The wal-index header's frame count and the frames already copied into the database (little-endian hosts). */
function walIndex(dbPath: string): { frames: number; backfilled: number } {
  const fd = openSync(`${dbPath}-shm`, "r");
  try {
    const header = Buffer.alloc(100);
    readSync(fd, header, 0, 100, 0);
    return { frames: header.readUInt32LE(16), backfilled: header.readUInt32LE(96) };
  } finally {
    closeSync(fd);
  }
}

async function setUp(t: TestContext) {
  const dir = shortTempDir(t);
  const dbPath = join(dir, "state.db");
  const daemon = await serve(t, dbPath, { readers: 1 });
  const db = await openSessionDB({ path: dbPath, mode: "daemon" });
  t.after(() => db.close().catch(() => undefined));
  await db.createSession("s", "cli");
  const acknowledged: string[] = [];
  for (let i = 0; i < BEFORE; i++) {
    await db.appendMessage("s", { role: "user", content: `before ${i}` });
    acknowledged.push(`before ${i}`);
  }
  return { dbPath, daemon, db, acknowledged };
}

/** Appends until the daemon refuses; returns the codes of the refusals. */
async function appendAfter(db: SessionDB, acknowledged: string[]): Promise<string[]> {
  const failures: string[] = [];
  for (let i = 0; i < AFTER; i++) {
    try {
      await db.appendMessage("s", { role: "user", content: `after ${i}` });
      acknowledged.push(`after ${i}`);
    } catch (err) {
      failures.push(err instanceof SessionDBError ? err.code : String(err));
      break;
    }
  }
  return failures;
}

async function exitOf(daemon: Awaited<ReturnType<typeof serve>>) {
  let limit: NodeJS.Timeout | undefined;
  return Promise.race([
    daemon.child.done,
    new Promise<never>((_, reject) => {
      limit = setTimeout(() => reject(new Error(`the daemon still ran ${EXIT_LIMIT_MS} ms after its WAL was damaged`)), EXIT_LIMIT_MS);
    }),
  ]).finally(() => clearTimeout(limit));
}

function assertWholeWith(dbPath: string, acknowledged: string[]): void {
  const file = checkFile(dbPath);
  assert.equal(file.integrity, "ok");
  assert.equal(file.ftsIntegrity, "ok");
  assert.deepEqual(file.counterMismatches, []);
  const stored = new Set(rawAll<{ content: string }>(dbPath, "SELECT content FROM messages").map((r) => r.content));
  assert.deepEqual(acknowledged.filter((c) => !stored.has(c)), [], "acknowledged writes are missing");
}

for (const kill of [false, true]) {
  test(`the -wal unlinked under a running daemon: the next write gets UNAVAILABLE, ${kill ? "SIGKILL at once" : "the daemon exits 1"}, every acknowledged write is in the file`, async (t) => {
    const { dbPath, daemon, db, acknowledged } = await setUp(t);
    unlinkSync(`${dbPath}-wal`);
    const failures = await appendAfter(db, acknowledged);
    assert.deepEqual(failures, ["UNAVAILABLE"], "the first write after the unlink is refused, not applied");
    if (kill) {
      daemon.child.kill();
      await daemon.child.done.catch(() => undefined);
    } else {
      const exited = await exitOf(daemon);
      assert.notEqual(exited.code, 0, "a daemon that lost its WAL exits non-zero, so a service restarts it");
      assert.match(exited.stderr, /state\.db-wal was removed \(or replaced\) under the daemon/);
    }
    assertWholeWith(dbPath, acknowledged);
  });
}

for (const kill of [false, true]) {
  test(`the -wal truncated under a running daemon: the next write gets UNAVAILABLE, ${kill ? "SIGKILL at once" : "the daemon exits 1"}, the file is whole with every checkpointed write`, async (t) => {
    const { dbPath, daemon, db, acknowledged } = await setUp(t);
    // What a truncation cuts off is gone whoever notices; these writes were copied into the
    // database by the daemon's idle checkpoint first, so none of them may be lost.
    await waitUntil("the idle checkpoint copied the WAL into the database", () => {
      const { frames, backfilled } = walIndex(dbPath);
      return frames > 0 && backfilled === frames;
    });
    truncateSync(`${dbPath}-wal`, 0);
    const failures = await appendAfter(db, acknowledged);
    assert.deepEqual(failures, ["UNAVAILABLE"], "the first write after the truncation is refused, not applied");
    if (kill) {
      daemon.child.kill();
      await daemon.child.done.catch(() => undefined);
    } else {
      const exited = await exitOf(daemon);
      assert.notEqual(exited.code, 0, "a daemon whose WAL was truncated exits non-zero, so a service restarts it");
      assert.match(exited.stderr, /state\.db-wal was truncated under the daemon/);
    }
    assertWholeWith(dbPath, acknowledged);
  });
}

test("the -wal truncated while the daemon is idle, then SIGTERM: nothing is checkpointed from it, exit 1, the file is whole", async (t) => {
  const { dbPath, daemon, acknowledged } = await setUp(t);
  await waitUntil("the idle checkpoint copied the WAL into the database", () => {
    const { frames, backfilled } = walIndex(dbPath);
    return frames > 0 && backfilled === frames;
  });
  truncateSync(`${dbPath}-wal`, 0);
  const exited = await daemon.stop();
  assert.notEqual(exited.code, 0, "the stop found the WAL truncated: a failure, so a service restarts the daemon");
  assert.match(exited.stderr, /state\.db-wal was truncated under the daemon/);
  assertWholeWith(dbPath, acknowledged);
});

test("the -wal cut in half under writes: the daemon exits 1 and what is left replays to a whole file", async (t) => {
  const { dbPath, daemon, db } = await setUp(t);
  // Writes back to back, so the WAL holds frames no checkpoint has copied yet when it is cut.
  let refused: string | null = null;
  let cut = false;
  for (let i = 0; i < 2000 && refused === null; i++) {
    const pending = db.appendMessage("s", { role: "user", content: `load ${i} `.padEnd(3000, "z") });
    if (i === 200) {
      // Half of what its frames span (the file itself may be longer: a WAL restarted keeps its length).
      const { frames } = walIndex(dbPath);
      truncateSync(`${dbPath}-wal`, Math.floor((32 + frames * (4096 + 24)) / 2));
      cut = true;
    }
    await pending.catch((err: unknown) => (refused = err instanceof SessionDBError ? err.code : String(err)));
  }
  assert.ok(cut);
  assert.equal(refused, "UNAVAILABLE");
  const exited = await exitOf(daemon);
  assert.notEqual(exited.code, 0);
  assert.match(exited.stderr, /state\.db-wal was truncated under the daemon/);
  const file = checkFile(dbPath);
  assert.equal(file.integrity, "ok");
  assert.equal(file.ftsIntegrity, "ok");
  assert.deepEqual(file.counterMismatches, []);
});

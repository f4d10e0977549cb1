/**
 * The disk fills up under the daemon: writes fail with IO and a message that says so, nothing
 * acknowledged is lost, reads go on, and once space returns writes succeed again on the same
 * daemon. Two ways to fill it: a small tmpfs (when this process may mount one: root) and, always,
 * SQLite's `max_page_count` on the writer's connection (the `faultMaxPageCount` test hook).
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, statfsSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test, type TestContext } from "node:test";
import { SessionDBError, type SessionDB } from "../../src/index.js";
import { controlOf, daemonStats, shortTempDir, type DaemonProcess } from "../helpers/daemon.js";
import { withRaw } from "../helpers/sqlite-files.js";
import { checkFile, FAULTS, mib, serve } from "./harness.js";

const CONTENT_BYTES = 32 * 1024;
const PIPELINE = 16;

interface Filled {
  acked: Map<number, string>;
  errors: SessionDBError[];
}

/** Appends big messages, `PIPELINE` at a time, until `wanted` writes have failed. */
async function fillUntilFull(db: SessionDB, session: string, wanted: number): Promise<Filled> {
  const acked = new Map<number, string>();
  const errors: SessionDBError[] = [];
  let seq = 0;
  while (errors.length < wanted && seq < 100_000) {
    const wave = Array.from({ length: PIPELINE }, () => {
      const content = `fill ${seq++} ${"z".repeat(CONTENT_BYTES)}`;
      return db.appendMessage(session, { role: "user", content }).then(
        (id) => void acked.set(id, content.slice(0, 24)),
        (err: unknown) => void errors.push(err as SessionDBError),
      );
    });
    await Promise.all(wave);
  }
  return { acked, errors };
}

/**
 * The same attack whichever way the disk fills, once per way of giving space back: fill until
 * writes fail, check, make room, write again.
 */
async function diskFullScenario(
  t: TestContext,
  daemon: DaemonProcess,
  rooms: Array<() => unknown>,
  label: string,
  onDisk: boolean,
): Promise<void> {
  const db = await daemon.open(t);
  await db.createSession("fill", "cli");
  const acked = new Map<number, string>();
  const figures: string[] = [];
  for (const makeRoom of rooms) {
    const filled = await fillUntilFull(db, "fill", 10);
    for (const [id, head] of filled.acked) acked.set(id, head);
    assert.ok(filled.acked.size > 0, "nothing fitted before the disk was full");
    for (const err of filled.errors) {
      assert.ok(err instanceof SessionDBError, String(err));
      assert.equal(err.code, "IO", `${err.code}: ${err.message}`);
      assert.match(err.message, /disk is full/i);
    }
    // Reads go on while the disk is full, and every acknowledged write is there.
    assert.equal(await db.messageCount({ sessionId: "fill" }), acked.size);
    const stored = withRaw(daemon.dbPath, (raw) => raw.prepare("SELECT id, substr(content, 1, 24) AS head FROM messages").all(), {
      readonly: true,
    }) as Array<{ id: number; head: string }>;
    assert.deepEqual(new Map(stored.map((r) => [r.id, r.head])), acked);

    const walAtFull = walBytes(daemon.dbPath);
    await makeRoom();
    for (let i = 0; i < 20; i++) {
      const content = `after room ${i} ${"y".repeat(1024)}`;
      acked.set(await db.appendMessage("fill", { role: "user", content }), content.slice(0, 24));
    }
    // Once there is room, the WAL's space is given back to the disk (a TRUNCATE checkpoint).
    const walAfter = walBytes(daemon.dbPath);
    if (onDisk) assert.ok(walAfter < walAtFull, `the WAL stayed at ${mib(walAfter)} after space returned`);
    figures.push(`${filled.acked.size} fitted, ${filled.errors.length} IO, WAL ${mib(walAtFull)} -> ${mib(walAfter)}`);
    if (figures.length === 1) figures.push(`message "${filled.errors[0]?.message}"`);
  }
  const stats = await daemonStats(db);
  assert.equal(stats.pid, daemon.pid, "the daemon was restarted");
  assert.equal(await db.messageCount({ sessionId: "fill" }), acked.size);

  const stopped = await daemon.stop();
  assert.equal(stopped.code, 0, stopped.stderr);
  const check = checkFile(daemon.dbPath);
  assert.equal(check.integrity, "ok");
  assert.equal(check.ftsIntegrity, "ok");
  assert.deepEqual(check.counterMismatches, []);
  t.diagnostic(`${label}, ${CONTENT_BYTES / 1024} KiB writes, ${rooms.length} fill/room cycles: ${figures.join("; ")}; all ${acked.size} acknowledged writes kept, 20 writes after each room, same daemon`);
}

function walBytes(dbPath: string): number {
  return statSync(`${dbPath}-wal`).size;
}

function tryMountTmpfs(dir: string, size: string): boolean {
  try {
    execFileSync("mount", ["-t", "tmpfs", "-o", `size=${size}`, "tmpfs", dir], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

test("a full tmpfs: writes fail with IO, nothing acknowledged is lost, writes resume when space returns", async (t) => {
  // Not shortTempDir: the tmpfs must be unmounted before its directory is removed.
  const disk = mkdtempSync("/tmp/sdb-disk-");
  const mounted = tryMountTmpfs(disk, "24m");
  t.after(() => {
    if (mounted) execFileSync("umount", ["-l", disk]);
    rmSync(disk, { recursive: true, force: true });
  });
  if (!mounted) {
    t.skip("cannot mount a tmpfs here (not root); the max_page_count test covers a full database");
    return;
  }
  // Two ballast files leave about 8 MiB for the database, its WAL and its shared memory; each one
  // removed is space returning, as much as the WAL held (the database needs room to take it in).
  const ballast = [1, 2].map((i) => join(disk, `ballast-${i}`));
  for (const file of ballast) writeFileSync(file, Buffer.alloc(8 * 1024 * 1024));
  const daemon = await serve(t, join(disk, "state.db"), { readers: 2 });
  const free = statfsSync(disk);
  const label = `tmpfs of 24 MiB with ${mib(free.bavail * free.bsize)} free`;
  await diskFullScenario(t, daemon, ballast.map((file) => () => rmSync(file)), label, true);
});

test("a database at max_page_count: writes fail with IO, nothing acknowledged is lost, writes resume when the cap is lifted", async (t) => {
  const dbPath = join(shortTempDir(t), "state.db");
  const daemon = await serve(t, dbPath, { readers: 2, env: FAULTS });
  const control = await daemon.open(t);
  await control.createSession("warm-up", "cli");
  const pages = withRaw(dbPath, (raw) => raw.pragma("page_count", { simple: true }) as number);
  // Room for about 1.5 MiB of messages (4 KiB pages), then the "disk" is full; each room is 400 pages more.
  let maxPages = pages + 400;
  await controlOf(control).fault("faultMaxPageCount", maxPages);
  const room = () => controlOf(control).fault("faultMaxPageCount", (maxPages += 400));
  await diskFullScenario(t, daemon, [room, room, () => controlOf(control).fault("faultMaxPageCount", null)], `max_page_count from ${pages + 400}`, false);
});

/**
 * What the daemon does to files beside the database (SPEC §5): it removes nothing at its socket
 * path but a stale socket of its own, and at shutdown only the socket it made; it never follows a
 * planted symbolic link for its lock file; and when it cannot start, it says why with the real
 * code (`IO` naming the path), also when another user's daemon is in the way.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import {
  chmodSync, chownSync, closeSync, existsSync, lstatSync, mkdirSync, openSync, readFileSync, renameSync, symlinkSync, writeFileSync, writeSync,
} from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { freshDbPath, shortTempDir, startDaemon } from "../helpers/daemon.js";
import { serveExpectingRefusal } from "../helpers/serve-outcome.js";

const NOBODY = { uid: 65534, gid: 65534 };
const isRoot = process.getuid?.() === 0;

test("serve --socket naming another database: it refuses to start, and that file is left byte for byte", async (t) => {
  const dir = shortTempDir(t);
  const precious = join(dir, "precious.db");
  writeFileSync(precious, "SQLite format 3\0 precious bytes");
  const result = await serveExpectingRefusal(t, join(dir, "other.db"), ["--socket", precious]);
  assert.equal(result.code, 1);
  assert.match(result.stderr, /^error IO: refusing to start: .*precious\.db.* is a regular file .*not a socket; it is never removed/m);
  assert.equal(readFileSync(precious, "utf8"), "SQLite format 3\0 precious bytes");
});

test("a regular file notes.sock beside a database named notes: serve refuses naming it, the file stays", async (t) => {
  const dir = shortTempDir(t);
  const notes = join(dir, "notes");
  writeFileSync(`${notes}.sock`, "my notes about sockets");
  const result = await serveExpectingRefusal(t, notes);
  assert.equal(result.code, 1);
  assert.match(result.stderr, /notes\.sock/);
  assert.match(result.stderr, /not a socket/);
  assert.equal(readFileSync(`${notes}.sock`, "utf8"), "my notes about sockets");
});

test("at shutdown the daemon removes only the socket it made, not a file put at its path since", async (t) => {
  const dbPath = freshDbPath(t);
  const daemon = await startDaemon(t, dbPath);
  renameSync(daemon.socketPath, `${daemon.socketPath}.moved`);
  writeFileSync(daemon.socketPath, "not the daemon's");
  const stopped = await daemon.stop();
  assert.equal(stopped.code, 0, stopped.stderr);
  assert.equal(readFileSync(daemon.socketPath, "utf8"), "not the daemon's");
});

test("a live socket at the socket path (another daemon's): serve refuses, naming its pid, and the socket keeps working", async (t) => {
  const dir = shortTempDir(t);
  const first = await startDaemon(t, join(dir, "first.db"));
  const result = await serveExpectingRefusal(t, join(dir, "second.db"), ["--socket", first.socketPath]);
  assert.equal(result.code, 1);
  assert.match(result.stderr, new RegExp(`^error UNAVAILABLE: refusing to start: a sessiondb daemon \\(pid ${first.pid}\\) serving .*first\\.db already listens on `, "m"));
  assert.equal(await (await first.open(t)).getSession("none"), null);
});

test("a planted <db>.daemon-lock symbolic link: serve refuses with a clear error and never creates its target", async (t) => {
  const dir = shortTempDir(t);
  const dbPath = join(dir, "state.db");
  const target = join(dir, "elsewhere", "owned-by-the-planter");
  mkdirSync(join(dir, "elsewhere"));
  symlinkSync(target, `${dbPath}.daemon-lock`);
  const result = await serveExpectingRefusal(t, dbPath);
  assert.equal(result.code, 1);
  assert.match(result.stderr, /^error IO: refusing .*state\.db\.daemon-lock as the daemon's lock file: it is a symbolic link/m);
  assert.equal(existsSync(target), false, "the daemon created a file where the link points");
  assert.ok(lstatSync(`${dbPath}.daemon-lock`).isSymbolicLink());
});

test("startup errors carry their real code: a directory or a file serve cannot write is IO naming it, never INTERNAL", async (t) => {
  if (!isRoot) {
    t.skip("needs root to run serve as another user (uid 65534) on files that user may only read");
    return;
  }
  const dir = shortTempDir(t);
  chmodSync(dir, 0o755);

  // A directory the user may not write: neither the database nor the lock file can be created
  // (the CLI's file check says so before the daemon tries the lock file).
  const readOnlyDir = join(dir, "ro");
  mkdirSync(readOnlyDir, { mode: 0o755 });
  const inReadOnlyDir = await serveExpectingRefusal(t, join(readOnlyDir, "state.db"), [], NOBODY);
  assert.equal(inReadOnlyDir.code, 1);
  assert.match(inReadOnlyDir.stderr, /^error IO: .*ro\/state\.db.*(read-only for this user|EACCES)/m);
  assert.doesNotMatch(inReadOnlyDir.stderr, /INTERNAL/);

  // A database the user may only read, in a directory it may write: serve refuses to start.
  const shared = join(dir, "shared");
  mkdirSync(shared, { mode: 0o755 });
  chownSync(shared, NOBODY.uid, NOBODY.gid);
  const dbPath = join(shared, "state.db");
  writeFileSync(dbPath, "");
  chmodSync(dbPath, 0o644);
  const readOnlyFile = await serveExpectingRefusal(t, dbPath, [], NOBODY);
  assert.equal(readOnlyFile.code, 1);
  // Root's file: the daemon never serves another user's file (PERMISSION naming it, its owner and mode).
  assert.match(readOnlyFile.stderr, /^error PERMISSION: cannot serve: .*shared\/state\.db belongs to uid 0 \(root\) \(mode 0644\), not to this user \(uid 65534 \(nobody\)\)/m);
  assert.doesNotMatch(readOnlyFile.stderr, /INTERNAL/);
});

test("a full disk at startup is IO naming the file that could not be written, never INTERNAL", async (t) => {
  if (!isRoot) {
    t.skip("needs root to mount a small tmpfs that plays the full disk");
    return;
  }
  const mountPoint = shortTempDir(t);
  const mounted = spawnSync("mount", ["-t", "tmpfs", "-o", "size=64k", "tmpfs", mountPoint]);
  if (mounted.status !== 0) {
    t.skip(`mount -t tmpfs is not permitted here: ${mounted.stderr.toString().trim()}`);
    return;
  }
  // Unmounted before the temp dir is removed, whatever happens.
  try {
    const filler = openSync(join(mountPoint, "filler"), "w");
    try {
      for (;;) writeSync(filler, Buffer.alloc(4096));
    } catch (err) {
      assert.equal((err as NodeJS.ErrnoException).code, "ENOSPC");
    } finally {
      closeSync(filler);
    }
    const result = await serveExpectingRefusal(t, join(mountPoint, "state.db"));
    assert.equal(result.code, 1);
    assert.match(result.stderr, /^error IO: .*state\.db\.daemon-lock.*disk is full/m);
  } finally {
    spawnSync("umount", [mountPoint]);
  }
});

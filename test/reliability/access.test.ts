/**
 * Access to the daemon (SPEC §5): the socket file is 0600 and, when it lives in the private
 * runtime directory, that directory is 0700 and ours. A client running as another user cannot
 * connect (tested as root by dropping to uid 65534; elsewhere the modes are what is asserted),
 * and a runtime directory planted by another user is refused rather than used.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { chmodSync, chownSync, mkdirSync, statSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { CLI, shortTempDir, waitUntilServing } from "../helpers/daemon.js";
import { Child, type Finished } from "../helpers/processes.js";
import { serve } from "./harness.js";

const NOBODY = 65534;
const isRoot = process.getuid?.() === 0;

/** What a client running as uid/gid 65534 gets when it connects to `socketPath`: "connected" or the error code. */
function connectAsNobody(socketPath: string): Promise<string> {
  const script = `
    const s = require("node:net").connect(process.argv[1]);
    s.on("connect", () => { console.log("connected"); s.destroy(); });
    s.on("error", (e) => console.log(e.code));`;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["-e", script, socketPath], { uid: NOBODY, gid: NOBODY, stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (out += chunk));
    child.on("error", reject);
    child.on("close", () => resolve(out.trim()));
  });
}

/**
 * Where the daemon puts the socket of a database whose path is too long for one beside it
 * (SPEC §5), worked out here rather than by `defaultSocketPath`, which would create the directory.
 */
function runtimeSocketPath(runtimeDir: string, dbPath: string): string {
  return join(runtimeDir, "sessiondb", `${createHash("sha256").update(dbPath).digest("hex").slice(0, 32)}.sock`);
}

/** Runs `serve` with that runtime directory; its output if it exits non-zero, null if it started serving. */
async function serveMustFail(dbPath: string, runtimeDir: string): Promise<Finished | null> {
  const child = new Child(process.execPath, [CLI, "--db", dbPath, "serve", "--readers", "1"], {
    env: { ...process.env, XDG_RUNTIME_DIR: runtimeDir },
  });
  const started = waitUntilServing(child, runtimeSocketPath(runtimeDir, dbPath)).then(() => null, () => null);
  const finished = await Promise.race([child.done, started]);
  child.kill();
  await child.done;
  return finished !== null && finished.code !== 0 ? finished : null;
}

function modeOf(path: string): number {
  return statSync(path).mode & 0o777;
}

test("the socket beside the database is 0600: another user cannot connect even where the directory is open", async (t) => {
  const dir = shortTempDir(t);
  chmodSync(dir, 0o755); // the directory lets anyone in: only the socket's own mode protects it
  const daemon = await serve(t, join(dir, "state.db"), { readers: 1 });
  const socket = statSync(daemon.socketPath);
  assert.ok(socket.isSocket());
  assert.equal(socket.mode & 0o777, 0o600);
  assert.equal(socket.uid, process.getuid?.());
  if (!isRoot) {
    t.diagnostic("not root: cannot run a client as another uid; asserted the modes only");
    return;
  }
  assert.equal(await connectAsNobody(daemon.socketPath), "EACCES");
  // The owner still connects.
  assert.equal(await (await daemon.open(t)).getSession("x"), null);
  t.diagnostic(`socket ${daemon.socketPath} mode 0600 in a 0755 directory: uid ${NOBODY} gets EACCES`);
});

test("a database path too long for a socket: the socket goes to a 0700 runtime directory of ours", async (t) => {
  const base = shortTempDir(t);
  chmodSync(base, 0o755);
  const deep = join(base, "d".repeat(60), "e".repeat(60));
  mkdirSync(deep, { recursive: true });
  const dbPath = join(deep, "state.db");
  const runtime = join(base, "run");
  mkdirSync(runtime, { mode: 0o755 });
  const daemon = await serve(t, dbPath, { readers: 1, env: { XDG_RUNTIME_DIR: runtime }, listensOn: runtimeSocketPath(runtime, dbPath) });
  const dir = statSync(join(runtime, "sessiondb"));
  assert.equal(dir.mode & 0o777, 0o700);
  assert.equal(dir.uid, process.getuid?.());
  assert.equal(modeOf(daemon.socketPath), 0o600);
  if (isRoot) assert.equal(await connectAsNobody(daemon.socketPath), "EACCES");
});

test("a runtime directory planted by another user, or open to all, is not used as it is", async (t) => {
  if (!isRoot) {
    t.skip("needs root to plant a directory owned by another uid");
    return;
  }
  const base = shortTempDir(t);
  const deep = join(base, "d".repeat(60), "e".repeat(60));
  mkdirSync(deep, { recursive: true });
  const dbPath = join(deep, "state.db");

  // Owned by another user, open to all: the daemon refuses to start, naming the directory.
  const planted = join(base, "planted");
  mkdirSync(join(planted, "sessiondb"), { recursive: true });
  chownSync(join(planted, "sessiondb"), NOBODY, NOBODY);
  chmodSync(join(planted, "sessiondb"), 0o777);
  const refused = await serveMustFail(dbPath, planted);
  assert.ok(refused !== null, "the daemon used a directory another user owns");
  assert.match(refused.stderr, /sessiondb/);
  assert.match(refused.stderr, /owned by uid 65534/);

  // A symbolic link in its place: refused too.
  const linked = join(base, "linked");
  mkdirSync(linked);
  symlinkSync(join(planted, "sessiondb"), join(linked, "sessiondb"));
  const viaLink = await serveMustFail(dbPath, linked);
  assert.ok(viaLink !== null, "the daemon followed a symbolic link for its runtime directory");
  assert.match(viaLink.stderr, /symbolic link/);

  // Ours but open to all (an old umask): tightened to 0700, then used.
  const loose = join(base, "loose");
  mkdirSync(join(loose, "sessiondb"), { recursive: true });
  chmodSync(join(loose, "sessiondb"), 0o777);
  const daemon = await serve(t, dbPath, { readers: 1, env: { XDG_RUNTIME_DIR: loose }, listensOn: runtimeSocketPath(loose, dbPath) });
  assert.equal(modeOf(join(loose, "sessiondb")), 0o700);
  assert.equal(await connectAsNobody(daemon.socketPath), "EACCES");
});

/**
 * Memory per connection is bounded in bytes, not only in requests (SPEC §6): a frame of millions
 * of tiny values is refused before it is decoded; connections holding partial frames, or
 * pipelining huge requests, cannot make the daemon hold more than its budget; a frame left
 * incomplete and an idle connection are closed after their time limits. Good clients keep being
 * answered throughout, and the library client reconnects by itself after an idle close.
 */
import assert from "node:assert/strict";
import { connect, type Socket } from "node:net";
import { test, type TestContext } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import type { SessionDB } from "../../src/index.js";
import { encodeFrame } from "../../src/protocol/frame-codec.js";
import { HEADER_BYTES } from "../../src/protocol/frame-limits.js";
import { daemonStats, freshDbPath } from "../helpers/daemon.js";
import { RawConnection } from "../helpers/raw-connection.js";
import { waitUntil } from "../helpers/wait-until.js";
import { CLI, DaemonProcess, waitUntilServing } from "../helpers/daemon.js";
import { Child } from "../helpers/processes.js";
import { mib } from "./harness.js";

const MiB = 1024 * 1024;
const HUGE_APPENDS = 10;
/** Long enough for a loaded machine to send a 14 MiB frame; the 32 partial ones take four rounds of it. */
const FRAME_TIMEOUT_S = 8;

/** `serve` with extra flags (the harness's `serve` takes none of these). */
async function serveWith(t: TestContext, dbPath: string, flags: string[]): Promise<DaemonProcess> {
  const child = new Child(process.execPath, [CLI, "--db", dbPath, "serve", "--readers", "2", ...flags]);
  t.after(async () => {
    child.kill();
    await child.done.catch(() => undefined);
  });
  const socketPath = `${dbPath}.sock`;
  return new DaemonProcess(child, dbPath, socketPath, await waitUntilServing(child, socketPath));
}

/** A good client's calls, one after another, until `stop` resolves: how many, and the failures. */
async function goodClient(db: SessionDB, stop: Promise<void>): Promise<{ calls: number; failures: string[] }> {
  let stopped = false;
  void stop.then(() => (stopped = true));
  let calls = 0;
  const failures: string[] = [];
  while (!stopped || calls < 10) {
    try {
      await db.appendMessage("good", { role: "user", content: `good ${calls}` });
      assert.ok((await db.getSession("good")) !== null);
    } catch (err) {
      failures.push(String(err));
      break;
    }
    calls++;
  }
  return { calls, failures };
}

function rawSocket(t: TestContext, path: string): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(path);
    socket.on("error", () => undefined);
    socket.resume(); // reads (and drops) the daemon's error frame, so its close is seen
    t.after(() => socket.destroy());
    socket.once("connect", () => resolve(socket)).once("error", reject);
  });
}

test("a 16 MiB frame of 16.7 million empty maps is refused with PROTOCOL before it is decoded", async (t) => {
  const dbPath = freshDbPath(t);
  const daemon = await serveWith(t, dbPath, []);
  const db = await daemon.open(t);
  const before = (await daemonStats(db)).memory.rss;

  const bodyBytes = 16 * MiB - 1;
  const body = Buffer.alloc(bodyBytes, 0x80); // 0x80: an empty map
  body[0] = 0xdd; // array 32 …
  body.writeUInt32BE(bodyBytes - 5, 1); // … of every byte after its header
  const conn = await RawConnection.open(t, daemon.socketPath);
  conn.sendBody(body);
  const reply = await conn.next();
  assert.equal(reply.ok, false);
  assert.equal((reply.error as { code: string }).code, "PROTOCOL", JSON.stringify(reply));
  assert.equal(await conn.closesWithin(), true);

  const stats = await daemonStats(db);
  await db.createSession("after", "cli");
  assert.ok(stats.memory.rss - before < 100 * MiB, `RSS grew by ${mib(stats.memory.rss - before)}`);
  t.diagnostic(`RSS ${mib(before)} before, ${mib(stats.memory.rss)} after the refused frame`);
});

test("one connection pipelining 10 × 14 MiB appends, then 32 holding partial 16 MiB frames: RSS bounded, a good client answered throughout, the partial frames closed", async (t) => {
  const dbPath = freshDbPath(t);
  const daemon = await serveWith(t, dbPath, ["--frame-timeout", String(FRAME_TIMEOUT_S)]);
  const db = await daemon.open(t);
  await db.createSession("good", "cli");
  await db.createSession("hog", "cli");
  const before = (await daemonStats(db)).memory;
  // Per phase: the RSS it started from, its peak RSS, and the peak of the request bytes the daemon counts as held.
  const piped = { start: before.rss, rss: before.rss, requestBytes: before.requestBytes };
  const partials = { ...piped };
  let phase = piped;
  let sampling = true;
  const sample = async (): Promise<void> => {
    const { rss, requestBytes } = (await daemonStats(db)).memory;
    phase.rss = Math.max(phase.rss, rss);
    phase.requestBytes = Math.max(phase.requestBytes, requestBytes);
  };
  const sampler = (async () => {
    while (sampling) {
      await sample();
      await sleep(100);
    }
  })();

  let phasesDone!: () => void;
  const good = goodClient(db, new Promise<void>((resolve) => (phasesDone = resolve)));

  const replies = [];
  // One connection pipelining huge appends (the same frame again and again).
  const huge = encodeFrame({ id: 1, op: "appendMessage", args: ["hog", { role: "user", content: "h".repeat(14 * MiB) }] });
  try {
    const hog = await RawConnection.open(t, daemon.socketPath);
    for (let i = 0; i < HUGE_APPENDS; i++) hog.sendBytes(huge);
    for (let i = 0; i < HUGE_APPENDS; i++) replies.push(await hog.next());
    await sample();

    // Partial frames: a header announcing 16 MiB, then all of it but the last byte.
    partials.start = partials.rss = (await daemonStats(db)).memory.rss;
    phase = partials;
    const partial = Buffer.alloc(HEADER_BYTES + 16 * MiB - 1, 0x20);
    partial.writeUInt32BE(16 * MiB, 0);
    const holders = await Promise.all(Array.from({ length: 32 }, () => rawSocket(t, daemon.socketPath)));
    const holderClosed = holders.map((socket) => new Promise<void>((resolve) => socket.once("close", () => resolve())));
    for (const socket of holders) socket.write(partial);
    await Promise.all(holderClosed);
  } finally {
    phasesDone();
  }
  const { calls, failures } = await good;
  sampling = false;
  await sampler;

  assert.ok(replies.every((r) => r.ok === true), "the huge appends are all served, in turn");
  assert.deepEqual(failures, [], "the good client got an error");
  assert.ok(calls >= 10);
  assert.equal(await db.messageCount({ sessionId: "hog" }), HUGE_APPENDS);
  const report = `pipelined: RSS ${mib(before.rss)} before, ${mib(piped.rss)} at the peak, ${mib(piped.requestBytes)} of requests held at most; ` +
    `partial frames: RSS ${mib(partials.start)} at their start, ${mib(partials.rss)} at the peak, ${mib(partials.requestBytes)} of requests held at most`;
  // What the daemon counts as held: one connection runs one 14 MiB request at a time (its
  // requests in flight stay within 16 MiB), holds the next one read, and receives a third (counted
  // at its announced length), then is not read; the partial frames are admitted only while the
  // daemon-wide total (128 MiB) has room for all of each. (A connection holding under 1 MiB is
  // always read: the good client's calls.)
  // Each phase was seen holding at least one of its frames (the count is live), and no more than that.
  assert.ok(piped.requestBytes >= huge.length && piped.requestBytes <= 3 * huge.length + MiB, report);
  assert.ok(partials.requestBytes >= 16 * MiB && partials.requestBytes <= 128 * MiB + 2 * MiB, report);
  // RSS also holds what was freed and not yet given back (the V8 heaps' large strings until their
  // next collection, the allocator's arenas): a loose bound, far under what holding it all would
  // cost (ten 14 MiB appends served at once would cost over 1.4 GB, ~150 MiB each; 32 × 16 MiB is 512 MiB).
  assert.ok(piped.rss - before.rss < 800 * MiB, report);
  assert.ok(partials.rss - partials.start < 400 * MiB, report);
  t.diagnostic(`${report}; good client ${calls} calls, no error; 32 partial frames closed after --frame-timeout ${FRAME_TIMEOUT_S}`);
});

test("an idle connection is closed after --client-idle-timeout with a goodbye frame; the library client reconnects by itself", async (t) => {
  const dbPath = freshDbPath(t);
  const daemon = await serveWith(t, dbPath, ["--client-idle-timeout", "1"]);
  const db = await daemon.open(t);
  await db.createSession("idle", "cli");
  const raw = await RawConnection.open(t, daemon.socketPath);
  assert.equal((await raw.call(1, "ping")).result, "pong");

  const goodbye = await raw.next();
  assert.equal(goodbye.id, 0);
  assert.equal((goodbye.error as { code: string }).code, "CLOSED");
  assert.equal(await raw.closesWithin(), true);
  // The library client's connection was as idle: the daemon closes it too (asked on connections
  // of the test's own, each of which counts itself).
  await waitUntil("the daemon to close the library client's idle connection", async () => (await clientsCounted(t, daemon.socketPath)) <= 1);

  // Its next calls just work.
  const id = await db.appendMessage("idle", { role: "user", content: "after the idle close" });
  assert.deepEqual((await db.getMessages("idle")).map((m) => m.id), [id]);

  // A client that keeps calling is never idle: pings 100 ms apart for 2.5 idle timeouts get no
  // goodbye. (Letting that time pass is the point. Only a stall of this test's own of half the
  // timeout or more between two pings would excuse one.)
  const busy = await RawConnection.open(t, daemon.socketPath);
  const started = Date.now();
  let lastReply = started;
  for (let i = 2; Date.now() - started < 2500; i++) {
    const sentAfter = Date.now() - lastReply;
    const reply = await busy.call(i, "ping").catch((err: Error) => {
      if (sentAfter >= 500) return null;
      throw new Error(`a client pinging every 100 ms was closed as idle (${sentAfter} ms after its last reply): ${err.message}`);
    });
    if (reply === null) {
      t.diagnostic(`this test stalled ${sentAfter} ms between two pings; the goodbye it got is no failure`);
      break;
    }
    assert.equal(reply.result, "pong");
    lastReply = Date.now();
    await sleep(100);
  }
});

/** The daemon's connection count, asked on a connection of its own (counted too), then closed. */
async function clientsCounted(t: TestContext, socketPath: string): Promise<number> {
  const probe = await RawConnection.open(t, socketPath);
  try {
    const reply = await probe.call(1, "stats");
    return (reply.result as { clients: number }).clients;
  } finally {
    probe.destroy();
  }
}

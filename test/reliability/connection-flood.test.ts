/**
 * Connection floods: 1,000 connections open at once, then dropped — right away, after a hello,
 * halfway through a frame, or with requests in flight. Every one is accepted, the daemon keeps
 * serving, and its file descriptors and connection count return to their baseline.
 */
import assert from "node:assert/strict";
import { once } from "node:events";
import { connect, type Socket } from "node:net";
import { test } from "node:test";
import { encodeFrame } from "../../src/protocol/frame-codec.js";
import { daemonStats, freshDbPath } from "../helpers/daemon.js";
import { waitUntil } from "../helpers/wait-until.js";
import { fdCount, serve } from "./harness.js";

const CONNECTIONS = 1000;

/** How each flood's connections behave before they are dropped. */
const FLOODS: Record<string, (socket: Socket, i: number) => Promise<void>> = {
  "dropped at once": async () => undefined,
  "dropped after hello": async (socket, i) => {
    socket.write(encodeFrame({ id: i + 1, op: "hello", args: [{ protocol: 1 }] }));
    await once(socket, "data");
  },
  "dropped halfway through a frame": async (socket, i) => {
    socket.write(encodeFrame({ id: i + 1, op: "getMessages", args: ["s".repeat(200)] }).subarray(0, 100));
  },
  "dropped with requests in flight": async (socket, i) => {
    const requests = Array.from({ length: 20 }, (_, k) =>
      encodeFrame(k % 2 === 0 ? { id: k + 1, op: "searchMessages", args: ["flood"] } : { id: k + 1, op: "appendMessage", args: [`flood-${i % 10}`, { role: "user", content: `flood ${i}` }] }),
    );
    socket.write(Buffer.concat(requests));
  },
};

test(`floods of ${CONNECTIONS} concurrent connections, dropped four ways: all accepted, file descriptors back to baseline`, async (t) => {
  const dbPath = freshDbPath(t);
  const daemon = await serve(t, dbPath, { readers: 2 });
  const db = await daemon.open(t);
  for (let i = 0; i < 10; i++) await db.createSession(`flood-${i}`, "cli");
  // Every reader thread opens its connection on first use: use them all before the baseline.
  await Promise.all(Array.from({ length: 32 }, () => db.searchMessages("warm up the readers")));
  const baselineFds = fdCount(daemon.pid);
  const baselineClients = (await daemonStats(db)).clients;
  const figures: string[] = [];

  for (const [name, behave] of Object.entries(FLOODS)) {
    const sockets: Socket[] = [];
    const refused: string[] = [];
    await Promise.all(
      Array.from({ length: CONNECTIONS }, async (_, i) => {
        const socket = connect(daemon.socketPath);
        socket.on("error", (err: NodeJS.ErrnoException) => refused.push(err.code ?? err.message));
        sockets.push(socket);
        await new Promise((resolve) => socket.once("connect", resolve).once("close", resolve));
        if (!socket.destroyed) await Promise.race([behave(socket, i), once(socket, "close")]);
      }),
    );
    assert.deepEqual(refused, [], `${refused.length} of ${CONNECTIONS} connections failed (${name})`);
    // A connect completes once the kernel queues it; a daemon busy with the earlier connections'
    // requests accepts the rest a little later: wait for it to hold them, don't sample once.
    await waitUntil(`over half of the ${CONNECTIONS} connections open at once (${name})`, async () => (await daemonStats(db)).clients > baselineClients + CONNECTIONS / 2);
    const peakFds = fdCount(daemon.pid);
    for (const socket of sockets) socket.destroy();

    // Dropped connections are closed on the daemon's own time: waited for (a leak never comes back).
    let fds = peakFds;
    await waitUntil(`daemon fds back to ${baselineFds} (${peakFds} at the peak; ${name})`, () => (fds = fdCount(daemon.pid)) <= baselineFds);
    await waitUntil(`the connection count back to ${baselineClients} (${name})`, async () => (await daemonStats(db)).clients === baselineClients);
    figures.push(`${name}: fds ${baselineFds} -> ${peakFds} -> ${fds}`);
  }
  // Still serving, and the requests of the dropped connections were handled like any others.
  assert.equal(await db.getSession("nobody"), null);
  const stats = await daemonStats(db);
  assert.equal(stats.pid, daemon.pid);
  const stopped = await daemon.stop();
  assert.equal(stopped.code, 0, stopped.stderr);
  t.diagnostic(`floods of ${CONNECTIONS}: ${figures.join("; ")}`);
});

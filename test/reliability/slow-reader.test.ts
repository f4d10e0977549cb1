/**
 * A client that sends requests but does not read the replies (SPEC §6: backpressure) cannot make
 * the daemon buffer without limit: past its in-flight limit and 8 MiB of unsent replies the
 * daemon stops reading that socket, and serves everyone else meanwhile. When the client reads
 * again, every reply arrives.
 */
import assert from "node:assert/strict";
import { once } from "node:events";
import { connect } from "node:net";
import { test } from "node:test";
import { daemonStats, freshDbPath } from "../helpers/daemon.js";
import { decodeBody, encodeFrame } from "../../src/protocol/frame-codec.js";
import { FrameDecoder } from "../../src/protocol/frame-decoder.js";
import { waitUntilSteady } from "../helpers/wait-until.js";
import { mib, rssBytes, serve } from "./harness.js";

const REQUESTS = 5000;
const REPLY_BYTES = 64 * 1024;
/** The daemon's default per-connection in-flight limit. */
const MAX_IN_FLIGHT = 256;

test(`a client that pipelines ${REQUESTS} requests for ${REPLY_BYTES / 1024} KiB replies and never reads them cannot make the daemon buffer them`, async (t) => {
  const dbPath = freshDbPath(t);
  const daemon = await serve(t, dbPath, { readers: 2 });
  const db = await daemon.open(t);
  await db.createSession("big", "cli");
  await db.appendMessage("big", { role: "user", content: "b".repeat(REPLY_BYTES) });
  // Warm the reader threads up first, so RSS compares like with like.
  await Promise.all(Array.from({ length: 16 }, () => db.getMessages("big")));
  const before = await daemonStats(db);
  const rssBefore = rssBytes(daemon.pid);

  // A socket with no "data" listener reads nothing: the client is not reading.
  const slow = connect(daemon.socketPath);
  t.after(() => slow.destroy());
  await once(slow, "connect");
  slow.write(Buffer.concat(Array.from({ length: REQUESTS }, (_, i) => encodeFrame({ id: i + 1, op: "getMessages", args: ["big"] }))));

  // Let the daemon do all it will do for this client, then look.
  const served = await waitUntilSteady("the reads served to the client that reads nothing", async () => (await daemonStats(db)).readers.completed - before.readers.completed);
  const rssPaused = rssBytes(daemon.pid);
  // Everyone else is served while the slow client sits there.
  assert.equal((await db.getMessages("big")).length, 1);
  assert.ok(await db.appendMessage("big", { role: "assistant", content: "still writing" }));

  // Served: the in-flight limit, the 8 MiB of replies it may buffer and what the kernel holds. Far from all.
  const bufferedReplies = Math.ceil((8 * 1048576) / REPLY_BYTES);
  assert.ok(served < MAX_IN_FLIGHT + bufferedReplies + 64, `the daemon served ${served} of ${REQUESTS} requests for a client that reads nothing`);
  assert.ok(rssPaused - rssBefore < 128 * 1048576, `RSS grew from ${mib(rssBefore)} to ${mib(rssPaused)}`);

  // Reading again, the client gets every reply, in full.
  const ids = new Set<number>();
  const decoder = new FrameDecoder(64 * 1024 * 1024);
  await new Promise<void>((resolve, reject) => {
    slow.on("data", (chunk: Buffer) => {
      for (const body of decoder.push(chunk)) {
        const reply = decodeBody(body, true) as { id: number; ok: boolean; result: Array<{ content: string }> };
        if (reply.ok !== true || reply.result[0]?.content.length !== REPLY_BYTES) reject(new Error(JSON.stringify(reply).slice(0, 200)));
        ids.add(reply.id);
      }
      if (ids.size === REQUESTS) resolve();
    });
    slow.on("close", () => reject(new Error(`the daemon closed the connection after ${ids.size} replies`)));
  });
  assert.equal(ids.size, REQUESTS);
  t.diagnostic(
    `slow reader: ${served} of ${REQUESTS} requests served while it read nothing; daemon RSS ${mib(rssBefore)} -> ${mib(rssPaused)}; all ${REQUESTS} replies arrived once it read`,
  );
});

/**
 * Convoy modes `daemon`, `daemon-keyless`, `daemon-ping` and `daemon-pipelined`: a sessiondb client of the daemon,
 * keeping `inFlight` calls in flight (1: one at a time, like an agent; 64: the pipelining client).
 * Each call appends a message, or pings (the same round trip with no database work).
 */
import { openSessionDB } from "../../src/index.js";
import { appendLoop, asNewMessage, loadMessages } from "./append-loop.js";
import { ChildControl, runChild } from "./child-control.js";
import type { WriterConfig } from "./protocol.js";

runChild(async () => {
  const control = new ChildControl<WriterConfig>();
  const c = control.config;
  const messages = loadMessages(c.messagesFile);
  const db = await openSessionDB({
    path: c.db,
    mode: "daemon",
    idempotencyKeys: c.keys ?? true,
    ...(c.socket !== null ? { socketPath: c.socket } : {}),
  });
  const daemon = db.daemon;
  if (daemon === null) throw new Error("mode daemon opened no daemon client");
  await db.createSession(c.sessionId, "bench-daemon");
  const call =
    c.operation === "ping"
      ? () => daemon.ping()
      : (n: number) => db.appendMessage(c.sessionId, asNewMessage(messages[(c.offset + n) % messages.length]!));
  const outcome = await appendLoop(control, { seconds: c.seconds, lanes: c.inFlight, warmup: c.warmup, perCall: 1 }, call);
  await db.close();
  control.report({ ...outcome, retries: null });
});

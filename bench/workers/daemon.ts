/**
 * Convoy modes `daemon` and `daemon-pipelined`: a sessiondb client of the daemon, keeping
 * `inFlight` appends in flight (1: one at a time, like an agent; 64: the pipelining client).
 */
import { openSessionDB } from "../../src/index.js";
import { appendLoop, asNewMessage, loadMessages } from "./append-loop.js";
import { ChildControl, runChild } from "./child-control.js";
import type { WriterConfig } from "./protocol.js";

runChild(async () => {
  const control = new ChildControl<WriterConfig>();
  const c = control.config;
  const messages = loadMessages(c.messagesFile);
  const db = await openSessionDB({ path: c.db, mode: "daemon", ...(c.socket !== null ? { socketPath: c.socket } : {}) });
  await db.createSession(c.sessionId, "bench-daemon");
  const outcome = await appendLoop(control, { seconds: c.seconds, lanes: c.inFlight, warmup: c.warmup, perCall: 1 }, (n) =>
    db.appendMessage(c.sessionId, asNewMessage(messages[(c.offset + n) % messages.length]!)),
  );
  await db.close();
  control.report({ ...outcome, retries: null });
});

/**
 * Convoy mode `ceiling`: the physical limit of this machine for the same work. One process, a
 * fresh file, sessiondb's own append SQL, `batch` appends per BEGIN IMMEDIATE … COMMIT; every
 * append in a batch gets the batch's latency.
 */
import { openConnection } from "../../src/sqlite/connection.js";
import { parseOperation } from "../../src/operations/operation-params.js";
import { runOperation } from "../../src/sqlite/operations.js";
import { inWriteTransaction } from "../../src/sqlite/transaction.js";
import { appendLoop, asNewMessage, loadMessages } from "./append-loop.js";
import { ChildControl, runChild } from "./child-control.js";
import type { WriterConfig } from "./protocol.js";

runChild(async () => {
  const control = new ChildControl<WriterConfig>();
  const c = control.config;
  const messages = loadMessages(c.messagesFile);
  const db = openConnection(c.db, { busyTimeoutMs: 5000, synchronous: c.synchronous });
  inWriteTransaction(db, () => runOperation(db, "createSession", parseOperation("createSession", [c.sessionId, "bench-ceiling"])));
  const outcome = await appendLoop(
    control,
    { seconds: c.seconds, lanes: 1, warmup: c.warmup, perCall: c.batch },
    (n) =>
      inWriteTransaction(db, () => {
        for (let i = 0; i < c.batch; i++) {
          const m = messages[(c.offset + n * c.batch + i) % messages.length]!;
          runOperation(db, "appendMessage", parseOperation("appendMessage", [c.sessionId, asNewMessage(m)]));
        }
      }),
  );
  db.close();
  control.report({ ...outcome, retries: null });
});

/**
 * Convoy mode `busy`: what naive code does. better-sqlite3 on the file, SQLite's own busy
 * timeout (5 s) and nothing else: each append is INSERT + UPDATE in BEGIN IMMEDIATE … COMMIT,
 * and a lock that stays taken past the timeout is a failed append.
 */
import Database from "better-sqlite3";
import { appendLoop, loadMessages } from "./append-loop.js";
import { ChildControl, runChild } from "./child-control.js";
import type { WriterConfig } from "./protocol.js";

const BUSY_TIMEOUT_MS = 5000;

runChild(async () => {
  const control = new ChildControl<WriterConfig>();
  const c = control.config;
  const messages = loadMessages(c.messagesFile);
  const db = new Database(c.db, { timeout: BUSY_TIMEOUT_MS });
  db.pragma(`synchronous = ${c.synchronous}`);
  db.prepare("INSERT INTO sessions (id, source, started_at) VALUES (?, ?, ?)").run(c.sessionId, "bench-busy", Date.now() / 1000);
  const insert = db.prepare(
    `INSERT INTO messages (session_id, role, content, tool_call_id, tool_calls, tool_name, timestamp)
     VALUES (?, ?, ?, ?, ?, ?, ?)`,
  );
  const bump = db.prepare(
    "UPDATE sessions SET message_count = message_count + 1, tool_call_count = tool_call_count + ? WHERE id = ?",
  );
  const appendOne = db.transaction((n: number) => {
    const m = messages[(c.offset + n) % messages.length]!;
    const toolCalls = m.toolCalls === undefined ? null : JSON.stringify(m.toolCalls);
    insert.run(c.sessionId, m.role, m.content, m.toolCallId ?? null, toolCalls, m.toolName ?? null, Date.now() / 1000);
    bump.run(m.toolCalls?.length ?? 0, c.sessionId);
  });
  const outcome = await appendLoop(control, { seconds: c.seconds, lanes: 1, warmup: c.warmup, perCall: 1 }, (n) => appendOne.immediate(n));
  db.close();
  control.report({ ...outcome, retries: null });
});

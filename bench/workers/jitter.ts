/**
 * Convoy mode `jitter`: sessiondb's direct mode (BEGIN IMMEDIATE, 1 s busy timeout, then up to
 * 15 attempts 20–150 ms apart, SPEC §4), one append at a time.
 *
 * Direct mode does not expose its retry count, so this process counts the `BEGIN IMMEDIATE`
 * statements its connection runs (better-sqlite3's `exec`, wrapped here only): every attempt
 * beyond the first of an append is one application retry.
 */
import Database from "better-sqlite3";
import { openSessionDB } from "../../src/index.js";
import { appendLoop, asNewMessage, loadMessages } from "./append-loop.js";
import { ChildControl, runChild } from "./child-control.js";
import type { WriterConfig } from "./protocol.js";

let begins = 0;
const exec = Database.prototype.exec;
Database.prototype.exec = function (this: Database.Database, source: string) {
  if (source === "BEGIN IMMEDIATE") begins++;
  return exec.call(this, source);
};

runChild(async () => {
  const control = new ChildControl<WriterConfig>();
  const c = control.config;
  const messages = loadMessages(c.messagesFile);
  const db = await openSessionDB({ path: c.db, mode: "direct" });
  await db.createSession(c.sessionId, "bench-jitter");
  // One call at a time: the first measured call (n = warmup) starts the count.
  let beginsAtGo: number | null = null;
  const outcome = await appendLoop(control, { seconds: c.seconds, lanes: 1, warmup: c.warmup, perCall: 1 }, (n) => {
    if (n === c.warmup) beginsAtGo = begins;
    return db.appendMessage(c.sessionId, asNewMessage(messages[(c.offset + n) % messages.length]!));
  });
  await db.close();
  const attempts = beginsAtGo === null ? 0 : begins - beginsAtGo;
  control.report({ ...outcome, retries: attempts - outcome.appends - outcome.failures });
});

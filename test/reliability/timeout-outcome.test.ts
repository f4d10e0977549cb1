/**
 * TIMEOUT means "not applied" (SPEC §6, §8). A write the client gives up on while the daemon holds
 * it rejects with OUTCOME_UNKNOWN, never TIMEOUT; a write still waiting in the client, or one the
 * daemon did not start before its deadline, is TIMEOUT and is never applied afterwards. A retry
 * guided by a read after OUTCOME_UNKNOWN applies the message exactly once.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { SessionDBError, type SessionDB } from "../../src/index.js";
import { freshDbPath, holdWriteLock } from "../helpers/daemon.js";
import { serve } from "./harness.js";

const TIMEOUT_MS = 1000;

function codeOf(outcome: unknown): string {
  return outcome instanceof SessionDBError ? outcome.code : "OK";
}

async function settle(promise: Promise<unknown>): Promise<unknown> {
  return promise.then((value) => value, (err: unknown) => err);
}

/** How many messages of `session` have exactly this content. */
async function copies(db: SessionDB, session: string, content: string): Promise<number> {
  return (await db.getMessages(session)).filter((m) => m.content === content).length;
}

test("a stalled daemon (SIGSTOP): a sent write is OUTCOME_UNKNOWN, an unsent one TIMEOUT and never applied; read-guided retries apply each once", async (t) => {
  const dbPath = freshDbPath(t);
  const daemon = await serve(t, dbPath, { readers: 2 });
  const db = await daemon.open(t, { requestTimeoutMs: TIMEOUT_MS });
  const patient = await daemon.open(t);
  await db.createSession("stall", "cli");
  t.after(() => {
    try {
      process.kill(daemon.pid, "SIGCONT");
    } catch {
      // already gone
    }
  });

  process.kill(daemon.pid, "SIGSTOP");
  // Large writes fill the socket: the small ones behind them stay in the client, unsent.
  const big = "x".repeat(4 * 1024 * 1024);
  const contents = [...[0, 1, 2].map((i) => `${i}${big}`), ...Array.from({ length: 5 }, (_, i) => `small ${i}`)];
  const outcomes = await Promise.all(contents.map((content) => settle(db.appendMessage("stall", { role: "user", content }))));
  const codes = outcomes.map(codeOf);
  assert.equal(codes[0], "OUTCOME_UNKNOWN", `the first large write reached the daemon's socket: ${String(outcomes[0])}`);
  for (const code of codes) assert.ok(code === "OUTCOME_UNKNOWN" || code === "TIMEOUT", `got ${code} from a stopped daemon`);
  const timedOut = contents.filter((_, i) => codes[i] === "TIMEOUT");
  assert.ok(timedOut.length > 0, "no write waited in the client behind the large ones");
  process.kill(daemon.pid, "SIGCONT");

  // The caller's way out of OUTCOME_UNKNOWN: read, and write again only what is not there (with
  // a handle of ordinary patience: the machine may be slow to catch up).
  for (const [i, content] of contents.entries()) {
    if (codes[i] === "TIMEOUT" || (await copies(patient, "stall", content)) === 0) await patient.appendMessage("stall", { role: "user", content });
  }
  // Every abandoned write's deadline passed before the daemon woke: none of them can still be applied.
  await patient.appendMessage("stall", { role: "user", content: "barrier" });
  for (const content of contents) assert.equal(await copies(patient, "stall", content), 1, `${content.slice(0, 20)} is not there exactly once`);
  t.diagnostic(`stopped daemon: ${codes.join(", ")}`);
});

test("a busy daemon (writer behind another process's lock): writes past their deadline get the daemon's TIMEOUT and are never applied", async (t) => {
  const dbPath = freshDbPath(t);
  const daemon = await serve(t, dbPath, { readers: 2 });
  const db = await daemon.open(t, { requestTimeoutMs: TIMEOUT_MS });
  const patient = await daemon.open(t, { requestTimeoutMs: 60_000 });
  await db.createSession("busy", "cli");
  const lock = await holdWriteLock(t, dbPath);

  const hurried = await Promise.all(Array.from({ length: 10 }, (_, i) => settle(db.appendMessage("busy", { role: "user", content: `hurried ${i}` }))));
  const waiting = patient.appendMessage("busy", { role: "user", content: "patient" });
  await lock.release();
  await waiting;
  await patient.appendMessage("busy", { role: "user", content: "barrier" });

  for (const outcome of hurried) {
    assert.equal(codeOf(outcome), "TIMEOUT", String(outcome));
    assert.match((outcome as Error).message, /not applied/);
  }
  const messages = await patient.getMessages("busy");
  assert.deepEqual(messages.map((m) => m.content), ["patient", "barrier"]);
});

/**
 * The change feed (issue 26) on every transport: replay after a cursor then live events with no
 * gap and no duplicate, the filters, a session event for each change, and the three ways an
 * iteration ends. Every wait has a generous bound and no test depends on timing: a watcher is
 * known to be subscribed once it has given an event (a replayed one counts: the replay runs after
 * the subscription is registered), and each change waits for its event before the next is made.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { SessionChange, SessionDB, WatchEvent, WatchOptions } from "../../src/index.js";
import { expectCode, fresh, type Opener } from "./fixture.js";

/** How long one event may take to come: a bound for one that never does, not a speed target. */
const EVENT_LIMIT_MS = 60_000;

/** An iteration of `watch`, read one event at a time, each with a bound. */
export class Watcher {
  readonly #it: AsyncIterator<WatchEvent>;
  readonly seen: WatchEvent[] = [];

  constructor(db: SessionDB, opts?: WatchOptions) {
    this.#it = db.watch(opts)[Symbol.asyncIterator]();
  }

  /** The next event; fails if the iteration ends or none comes within the bound. */
  async next(): Promise<WatchEvent> {
    const result = await this.step();
    assert.ok(!result.done, "the watch ended");
    return result.value;
  }

  /** The next step of the iteration (done or an event), within the bound. */
  async step(): Promise<IteratorResult<WatchEvent>> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no event within ${EVENT_LIMIT_MS} ms`)), EVENT_LIMIT_MS);
    });
    try {
      const result = await Promise.race([this.#it.next(), timeout]);
      if (!result.done) this.seen.push(result.value);
      return result;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Events until one matches `until` (included). */
  async until(until: (event: WatchEvent) => boolean): Promise<WatchEvent[]> {
    const events: WatchEvent[] = [];
    for (;;) {
      const event = await this.next();
      events.push(event);
      if (until(event)) return events;
    }
  }

  /** Ends the iteration as `break` does. */
  async stop(): Promise<void> {
    await this.#it.return?.();
  }
}

export const isMessage = (id: number) => (e: WatchEvent) => e.type === "message" && e.message.id === id;
export const messageIds = (events: WatchEvent[]) => events.flatMap((e) => (e.type === "message" ? [e.message.id] : []));

/** Appends to session `sync` until the watcher gives an event: from then on it is subscribed. */
export async function subscribed(db: SessionDB, watcher: Watcher): Promise<void> {
  await db.ensureSession("sync", "sync");
  const id = await db.appendMessage("sync", { role: "user", content: "sync" });
  await watcher.until(isMessage(id));
}

export function watchContract(open: Opener): void {
  describe("watch", () => {
    test("replays the messages after the cursor, then follows live ones with no gap and no duplicate", async (t) => {
      const { db } = await fresh(t, open);
      await db.createSession("s", "cli");
      const before: number[] = [];
      for (let i = 0; i < 5; i++) before.push(await db.appendMessage("s", { role: "user", content: `before ${i}` }));
      const watcher = new Watcher(db, { afterMessageId: before[1]! });
      t.after(() => watcher.stop());
      const first = await watcher.next();
      assert.equal(first.type, "message");
      // Live ones appended while the replay may still run: each exactly once, in order, after the replayed ones.
      const after: number[] = [];
      for (let i = 0; i < 5; i++) after.push(await db.appendMessage("s", { role: "assistant", content: `after ${i}` }));
      const rest = await watcher.until(isMessage(after.at(-1)!));
      assert.deepEqual(messageIds([first, ...rest]), [...before.slice(2), ...after]);
      const row = (first as Extract<WatchEvent, { type: "message" }>).message;
      assert.deepEqual(row, (await db.getMessages("s")).find((m) => m.id === row.id), "the row as getMessages gives it");
    });

    test("a message with every column set is the row getMessages gives, replayed and live", async (t) => {
      const { db } = await fresh(t, open);
      await db.createSession("s", "cli");
      const full = (content: string) => ({
        role: "assistant", content, toolCallId: "call-1", toolCalls: [{ id: "call-1", type: "function", function: { name: "f", arguments: "{}" } }],
        toolName: "f", tokenCount: 12, finishReason: "tool_calls", reasoning: "because", reasoningDetails: [{ type: "text", text: "r" }],
        codexReasoningItems: [{ id: "x" }], timestamp: 1700000000,
      });
      const replayed = await db.appendMessage("s", full("replayed"));
      const watcher = new Watcher(db, { afterMessageId: 0 });
      t.after(() => watcher.stop());
      await watcher.until(isMessage(replayed));
      const live = await db.appendMessage("s", full("live"));
      const events = [...watcher.seen, ...(await watcher.until(isMessage(live)))];
      const rows = await db.getMessages("s");
      for (const id of [replayed, live]) {
        const event = events.find(isMessage(id)) as Extract<WatchEvent, { type: "message" }>;
        assert.deepEqual(event.message, rows.find((m) => m.id === id), `message ${id} as getMessages gives it`);
      }
    });

    test("without a cursor, starts from now: every message after the first it gives, once, in order", async (t) => {
      const { db } = await fresh(t, open);
      await db.createSession("s", "cli");
      const old = await db.appendMessage("s", { role: "user", content: "old" });
      const watcher = new Watcher(db);
      t.after(() => watcher.stop());
      const pending = watcher.next();
      const appended: number[] = [];
      let first: WatchEvent | null = null;
      void pending.then((e) => (first = e), () => undefined);
      while (first === null) {
        appended.push(await db.appendMessage("s", { role: "user", content: `m${appended.length}` }));
        await new Promise((resolve) => setImmediate(resolve));
      }
      const start = appended.indexOf((first as Extract<WatchEvent, { type: "message" }>).message.id);
      assert.ok(start >= 0, "the first event is a message appended after the watch began");
      for (let i = 0; i < 3; i++) appended.push(await db.appendMessage("s", { role: "user", content: `late ${i}` }));
      const rest = await watcher.until(isMessage(appended.at(-1)!));
      assert.deepEqual(messageIds([first, ...rest]), appended.slice(start));
      assert.ok(!messageIds(watcher.seen).includes(old), "nothing from before the watch");
    });

    test("one session, every session, one source", async (t) => {
      const { db } = await fresh(t, open);
      await db.createSession("a", "cli");
      await db.createSession("b", "telegram");
      const one = new Watcher(db, { sessionId: "a", afterMessageId: 0 });
      const all = new Watcher(db, { afterMessageId: 0 });
      const telegram = new Watcher(db, { source: "telegram", afterMessageId: 0 });
      t.after(() => Promise.all([one.stop(), all.stop(), telegram.stop()]));
      const ids: Array<[string, number]> = [];
      for (let i = 0; i < 4; i++) {
        for (const s of ["a", "b"]) ids.push([s, await db.appendMessage(s, { role: "user", content: `${s}${i}` })]);
      }
      const lastOf = (s: string) => ids.filter(([sid]) => sid === s).at(-1)![1];
      const idsOf = (s: string | null) => ids.filter(([sid]) => s === null || sid === s).map(([, id]) => id);
      // Commit order: a message of another session would come before the filter's last one.
      assert.deepEqual(messageIds(await one.until(isMessage(lastOf("a")))), idsOf("a"));
      assert.deepEqual(messageIds(await telegram.until(isMessage(lastOf("b")))), idsOf("b"));
      assert.deepEqual(messageIds(await all.until(isMessage(ids.at(-1)![1]))), idsOf(null));
      const events = [...one.seen, ...telegram.seen];
      assert.ok(events.every((e) => e.type !== "message" || e.message.session_id === (one.seen.includes(e) ? "a" : "b")));
    });

    test("a session event for each change, with the row as getSession gives it (null once deleted)", async (t) => {
      const { db } = await fresh(t, open);
      const watcher = new Watcher(db, { afterMessageId: 0 });
      t.after(() => watcher.stop());
      await subscribed(db, watcher);
      const changes: Array<[SessionChange, () => Promise<unknown>]> = [
        ["created", () => db.createSession("s", "cli", { model: "m" })],
        ["titled", () => db.setSessionTitle("s", "a title")],
        ["tokens", () => db.updateTokenCounts("s", { inputTokens: 10, outputTokens: 5 })],
        ["system_prompt", () => db.updateSystemPrompt("s", "you are terse")],
        ["ended", () => db.endSession("s", "done")],
        ["reopened", () => db.reopenSession("s")],
        ["cleared", async () => {
          const id = await db.appendMessage("s", { role: "user", content: "soon gone" });
          await watcher.until(isMessage(id));
          await db.clearMessages("s");
        }],
        ["deleted", () => db.deleteSession("s")],
      ];
      for (const [change, make] of changes) {
        await make();
        const events = await watcher.until((e) => e.type === "session" && e.change === change);
        const event = events.at(-1) as Extract<WatchEvent, { type: "session" }>;
        assert.equal(event.sessionId, "s", change);
        assert.deepEqual(event.session, await db.getSession("s"), `${change}: the row now`);
        const others = events.slice(0, -1).filter((e) => e.type !== "message");
        assert.deepEqual(others, [], `${change}: no other session event before it`);
      }
    });

    test("writes made one after another, each without waiting for its event, give one event each, in order", async (t) => {
      const { db } = await fresh(t, open);
      // PostgreSQL reads the notifications heard together on one snapshot (docs/postgres.md, Watching).
      if (db.engine === "postgres") return t.skip("PostgreSQL compares the sessions of the notifications heard together");
      const watcher = new Watcher(db, { afterMessageId: 0 });
      t.after(() => watcher.stop());
      await subscribed(db, watcher);
      await db.createSession("s", "cli");
      await db.setSessionTitle("s", "a title");
      const id = await db.appendMessage("s", { role: "user", content: "one" });
      await db.updateTokenCounts("s", { inputTokens: 3 });
      await db.endSession("s", "done");
      await db.reopenSession("s");
      await db.endSession("s", "again");
      await db.deleteSession("s");
      const events = await watcher.until((e) => e.type === "session" && e.change === "deleted");
      const told = events.map((e) => (e.type === "session" ? e.change : e.type === "message" ? e.message.id : e.type));
      assert.deepEqual(told, ["created", "titled", id, "tokens", "ended", "reopened", "ended", "deleted"]);
    });

    test("a filtered watch gets its sessions' events only", async (t) => {
      const { db } = await fresh(t, open);
      const cli = new Watcher(db, { source: "cli", afterMessageId: 0 });
      t.after(() => cli.stop());
      await db.createSession("c0", "cli");
      await db.appendMessage("c0", { role: "user", content: "sync" });
      await cli.until((e) => e.type === "message");
      await db.createSession("t", "telegram");
      await db.setSessionTitle("t", "not for cli");
      await db.createSession("c", "cli");
      const events = await cli.until((e) => e.type === "session" && e.sessionId === "c");
      assert.deepEqual(events.map((e) => (e.type === "session" ? [e.change, e.sessionId] : e.type)), [["created", "c"]]);
    });

    test("break, the signal and close() end the iteration", async (t) => {
      const { db } = await fresh(t, open);
      await db.createSession("s", "cli");
      await db.appendMessage("s", { role: "user", content: "one" });
      let seen = 0;
      for await (const event of db.watch({ afterMessageId: 0 })) {
        assert.equal(event.type, "message");
        seen++;
        break;
      }
      assert.equal(seen, 1);

      const controller = new AbortController();
      const signalled = new Watcher(db, { afterMessageId: 0, signal: controller.signal });
      await signalled.next();
      const waiting = signalled.step();
      controller.abort();
      assert.equal((await waiting).done, true, "aborting ends a pending next()");

      const aborted = new AbortController();
      aborted.abort();
      assert.equal((await new Watcher(db, { signal: aborted.signal }).step()).done, true, "an aborted signal: nothing");

      const closing = new Watcher(db, { afterMessageId: 0 });
      await closing.next();
      const pending = closing.step();
      await db.close();
      assert.equal((await pending).done, true, "close() ends a pending next()");
      await expectCode(() => new Watcher(db).step(), "CLOSED");
    });

    test("bad options reject the first next() with INVALID_ARGUMENT", async (t) => {
      const { db } = await fresh(t, open);
      const bad: unknown[] = [{ afterMessageId: -1 }, { afterMessageId: 1.5 }, { sessionId: 5 }, { sessionId: "a", source: "cli" }, { signal: "stop" }, "all"];
      for (const opts of bad) {
        await expectCode(() => new Watcher(db, opts as WatchOptions).step(), "INVALID_ARGUMENT");
      }
    });
  });
}

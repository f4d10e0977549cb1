/** deleteSession and pruneSessions: children are orphaned, never deleted (SPEC §3). */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { rawAll } from "../helpers/raw-db.js";
import { fresh, nowSeconds, setSession, type Opener } from "./fixture.js";

const DAY = 86_400;

export function removalContract(open: Opener): void {
  describe("deleteSession", () => {
    test("deletes the session and its messages, orphans its direct children, grandchildren keep their parent", async (t) => {
      const { db, path } = await fresh(t, open);
      await db.createSession("A", "cli");
      await db.createSession("B", "cli", { parentSessionId: "A" });
      await db.createSession("B2", "cli", { parentSessionId: "A" });
      await db.createSession("C", "cli", { parentSessionId: "B" });
      await db.appendMessage("A", { role: "user", content: "doomed" });
      await db.appendMessage("A", { role: "assistant", content: "doomed too" });
      await db.appendMessage("B", { role: "user", content: "survives" });
      await db.setSessionTitle("A", "Taken");
      assert.equal(await db.deleteSession("A"), true);
      assert.equal(await db.getSession("A"), null);
      assert.equal((await db.getSession("B"))?.parent_session_id, null);
      assert.equal((await db.getSession("B2"))?.parent_session_id, null);
      assert.equal((await db.getSession("C"))?.parent_session_id, "B");
      assert.deepEqual(rawAll(path, "SELECT session_id, content FROM messages"), [{ session_id: "B", content: "survives" }]);
      assert.equal(await db.messageCount(), 1);
      assert.equal(await db.setSessionTitle("B", "Taken"), true, "the deleted session's title is free");
    });

    test("a missing session gives false and changes nothing", async (t) => {
      const { db } = await fresh(t, open);
      await db.createSession("s", "cli");
      assert.equal(await db.deleteSession("ghost"), false);
      assert.equal(await db.sessionCount(), 1);
      assert.equal(await db.deleteSession("s"), true);
      assert.equal(await db.deleteSession("s"), false);
    });
  });

  describe("pruneSessions", () => {
    test("chain A(old) → B(old) → C(new) → D(new) prunes 2: C is orphaned, D keeps C", async (t) => {
      const { db, path } = await fresh(t, open);
      const now = nowSeconds();
      await db.createSession("A", "cli");
      await db.createSession("B", "cli", { parentSessionId: "A" });
      await db.createSession("C", "cli", { parentSessionId: "B" });
      await db.createSession("D", "cli", { parentSessionId: "C" });
      for (const id of ["A", "B", "C", "D"]) {
        await db.appendMessage(id, { role: "user", content: `message of ${id}` });
        await db.endSession(id, "done");
      }
      setSession(path, "A", { started_at: now - 200 * DAY, ended_at: now - 199 * DAY });
      setSession(path, "B", { started_at: now - 150 * DAY, ended_at: now - 149 * DAY });
      assert.equal(await db.pruneSessions(), 2);
      assert.deepEqual(rawAll(path, "SELECT id, parent_session_id FROM sessions ORDER BY id"), [
        { id: "C", parent_session_id: null },
        { id: "D", parent_session_id: "C" },
      ]);
      assert.deepEqual((await db.searchMessages("message")).map((h) => h.session_id).sort(), ["C", "D"]);
      assert.equal(await db.messageCount(), 2);
      assert.equal(await db.pruneSessions(), 0);
    });

    test("active sessions are never pruned, however old", async (t) => {
      const { db, path } = await fresh(t, open);
      await db.createSession("ancient-active", "cli");
      await db.appendMessage("ancient-active", { role: "user", content: "still going" });
      setSession(path, "ancient-active", { started_at: nowSeconds() - 5000 * DAY });
      assert.equal(await db.pruneSessions({ olderThanDays: 1 }), 0);
      assert.equal(await db.messageCount({ sessionId: "ancient-active" }), 1);
    });

    test("the cutoff is started_at older than olderThanDays (default 90)", async (t) => {
      const { db, path } = await fresh(t, open);
      const now = nowSeconds();
      for (const [id, ageDays] of [["d91", 91], ["d89", 89], ["d40", 40], ["d5", 5]] as const) {
        await db.createSession(id, "cli");
        await db.endSession(id, "done");
        setSession(path, id, { started_at: now - ageDays * DAY, ended_at: now - 1 });
      }
      assert.equal(await db.pruneSessions(), 1);
      assert.equal(await db.getSession("d91"), null);
      assert.equal(await db.pruneSessions({ olderThanDays: 30 }), 2);
      assert.deepEqual((await db.searchSessions()).map((s) => s.id), ["d5"]);
    });

    test("a source filter prunes only that source", async (t) => {
      const { db, path } = await fresh(t, open);
      const old = nowSeconds() - 100 * DAY;
      for (const [id, source] of [["c", "cli"], ["g", "telegram"]] as const) {
        await db.createSession(id, source);
        await db.endSession(id, "done");
        setSession(path, id, { started_at: old });
      }
      assert.equal(await db.pruneSessions({ source: "telegram" }), 1);
      assert.deepEqual((await db.searchSessions()).map((s) => s.id), ["c"]);
      assert.equal(await db.pruneSessions({ source: "none" }), 0);
      assert.equal(await db.pruneSessions({ source: "cli" }), 1);
    });
  });
}

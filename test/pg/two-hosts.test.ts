/**
 * Two "hosts" on one PostgreSQL database: two daemons (each with its own runtime directory, so its
 * own socket and instance lock, as on two machines), clients on each writing at once. Every
 * acknowledged write is there, counters are exact, a title is unique across both, and a kill -9
 * of one daemon loses nothing it acknowledged.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import { openSessionDB, SessionDBError, type SessionDB } from "../../src/index.js";
import { shortTempDir, startDaemon, type DaemonProcess } from "../helpers/daemon.js";
import { usePgServer } from "../helpers/postgres.js";

const server = usePgServer();

/** A daemon as on its own host: its own runtime dir, so its own socket and lock. */
async function host(t: Parameters<typeof shortTempDir>[0], url: string, name: string): Promise<DaemonProcess> {
  const runtime = shortTempDir(t);
  return startDaemon(t, url, { socketPath: join(runtime, `${name}.sock`), env: { XDG_RUNTIME_DIR: runtime } });
}

const CLIENTS_PER_HOST = 3;
const SESSIONS = 4;
const APPENDS_PER_CLIENT = 40;

test("two daemons on one database: every acknowledged append is there, counters exact, titles unique", async (t) => {
  // An empty database: both daemons create the schema at once, and it is created once.
  const url = server().createDatabase({ empty: true });
  const [a, b] = await Promise.all([host(t, url, "a"), host(t, url, "b")]);
  assert.equal(a.hello.engine, "postgres");
  const clients: SessionDB[] = [];
  for (const daemon of [a, b]) for (let i = 0; i < CLIENTS_PER_HOST; i++) clients.push(await daemon.open(t));
  for (let s = 0; s < SESSIONS; s++) await clients[s % clients.length]!.createSession(`shared-${s}`, "cli");

  const acknowledged = new Map<number, string>();
  await Promise.all(
    clients.map(async (db, c) => {
      for (let i = 0; i < APPENDS_PER_CLIENT; i++) {
        const session = `shared-${(c + i) % SESSIONS}`;
        const id = await db.appendMessage(session, { role: "user", content: `client ${c} message ${i}`, toolCalls: [{ n: 1 }] });
        acknowledged.set(id, session);
      }
    }),
  );
  assert.equal(acknowledged.size, clients.length * APPENDS_PER_CLIENT, "every append got its own id");

  // Both hosts race for the same titles: exactly one session gets each.
  const contenders = await Promise.allSettled(
    clients.map((db, c) => db.setSessionTitle(`shared-${c % SESSIONS}`, `race ${c % 2}`)),
  );
  for (const outcome of contenders) {
    if (outcome.status === "rejected") assert.equal((outcome.reason as SessionDBError).code, "TITLE_IN_USE");
  }

  const reader = clients[0]!;
  assert.equal(await reader.messageCount(), acknowledged.size);
  for (let s = 0; s < SESSIONS; s++) {
    const id = `shared-${s}`;
    const expected = [...acknowledged.values()].filter((v) => v === id).length;
    const row = await reader.getSession(id);
    assert.equal(row?.message_count, expected, `${id}: message_count is exact`);
    assert.equal(row?.tool_call_count, expected, `${id}: tool_call_count is exact`);
  }
  const stored = new Set((await Promise.all([...Array(SESSIONS).keys()].map((s) => b.open(t).then((db) => db.getMessages(`shared-${s}`))))).flat().map((m) => m.id));
  for (const id of acknowledged.keys()) assert.ok(stored.has(id), `acknowledged message ${id} is stored`);
  for (const title of ["race 0", "race 1"]) {
    const owners = (await reader.searchSessions({ limit: 100 })).filter((s) => s.title === title);
    assert.ok(owners.length <= 1, `at most one session is titled ${title}`);
  }
  assert.ok((await reader.searchSessions({ limit: 100 })).some((s) => s.title !== null), "some title was set");
});

test("kill -9 of one daemon loses nothing it acknowledged; the other host goes on", async (t) => {
  const url = server().freshDatabase(t);
  const [a, b] = await Promise.all([host(t, url, "a"), host(t, url, "b")]);
  // A's writer has no keys, so the kill ends it at once (with keys it would wait for a daemon on A until its deadline).
  const onA = await a.open(t, { idempotencyKeys: false });
  const onB = await b.open(t);
  await onA.createSession("s", "cli");
  const acknowledged: number[] = [];
  let stop = false;
  const writers = [onA, onB].map(async (db, w) => {
    for (let i = 0; !stop && i < 10_000; i++) {
      try {
        acknowledged.push(await db.appendMessage("s", { role: "user", content: `writer ${w} #${i}` }));
      } catch (err) {
        if (w === 0 && (err as SessionDBError).code === "UNAVAILABLE") return; // its daemon is gone
        throw err;
      }
    }
  });
  while (acknowledged.length < 60) await new Promise((r) => setTimeout(r, 10));
  await a.kill9();
  const afterKill = acknowledged.length;
  while (acknowledged.length < afterKill + 30) await new Promise((r) => setTimeout(r, 10));
  stop = true;
  await Promise.all(writers);

  const direct = await openSessionDB({ path: url, mode: "direct" });
  t.after(() => direct.close());
  assert.equal(direct.engine, "postgres");
  const stored = new Set((await direct.getMessages("s")).map((m) => m.id));
  for (const id of acknowledged) assert.ok(stored.has(id), `acknowledged message ${id} survived the kill`);
  assert.equal((await direct.getSession("s"))?.message_count, stored.size, "the counter matches the rows");
});

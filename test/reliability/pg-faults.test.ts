/**
 * PostgreSQL going away under a daemon and under direct mode (issue 23, item 2): every
 * sessiondb connection terminated, the server restarted (`pg_ctl restart -m fast`), a
 * `statement_timeout` firing. The daemon keeps serving in the same process, every acknowledged
 * append is there exactly once, nothing answered "not applied" is there; a host application in
 * direct mode gets a coded error, not a crash.
 */
import assert from "node:assert/strict";
import { test, type TestContext } from "node:test";
import { join } from "node:path";
import { writeFileSync } from "node:fs";
import { openSessionDB, SessionDBError, type SessionDB } from "../../src/index.js";
import { openPgPool, type PgPool } from "../../src/pg/pg-connection.js";
import { controlOf, shortTempDir, startDaemon } from "../helpers/daemon.js";
import { usePgServer } from "../helpers/postgres.js";
import { compiledFixture, isAlive, lastJsonLine, runToSuccess, spawnNode, type Finished } from "../helpers/processes.js";
import { waitUntil } from "../helpers/wait-until.js";

const server = usePgServer();

/** The test's own connections, named so that terminating "every sessiondb connection" spares them. */
async function adminPool(t: TestContext, url: string): Promise<PgPool> {
  const pool = await openPgPool(url, { max: 2, applicationName: "fault-test admin" });
  t.after(() => pool.end());
  return pool;
}

/** pg_terminate_backend of every connection sessiondb holds to this database; their application names. */
async function terminateSessiondb(admin: PgPool): Promise<string[]> {
  const { rows } = await admin.query(
    `SELECT application_name AS name, pg_terminate_backend(pid) AS ok FROM pg_stat_activity
      WHERE datname = current_database() AND application_name LIKE 'sessiondb %'`,
  );
  return rows.filter((r) => r.ok === true).map((r) => String(r.name));
}

/** What the clients were told about each append, by its unique content. */
class Tally {
  readonly acked = new Set<string>();
  readonly unknown = new Set<string>();
  readonly notApplied = new Map<string, string>();
  readonly codes = new Map<string, number>();
  /** One message per code, to say what an unexpected one was. */
  readonly messages = new Map<string, string>();
  reads = 0;

  count(code: string, err: unknown): void {
    this.codes.set(code, (this.codes.get(code) ?? 0) + 1);
    if (!this.messages.has(code)) this.messages.set(code, String(err));
  }
}

/** Appenders and a reader in parallel on one session, until `stop()`. */
function startLoad(db: SessionDB, sessionId: string, writers: number): { tally: Tally; stop(): Promise<void> } {
  const tally = new Tally();
  let stopping = false;
  const appenders = Array.from({ length: writers }, async (_, w) => {
    for (let i = 0; !stopping; i++) {
      const content = `ts-${w}-${i}`;
      try {
        await db.appendMessage(sessionId, { role: "user", content });
        tally.acked.add(content);
      } catch (err) {
        const code = err instanceof SessionDBError ? err.code : `uncoded ${String(err)}`;
        tally.count(code, err);
        // UNAVAILABLE from the socket itself (not the daemon) would be unknown; the daemon here never goes away.
        if (code === "OUTCOME_UNKNOWN") tally.unknown.add(content);
        else tally.notApplied.set(content, code);
        // A failure can be immediate (a daemon gone): let the test's own timers run.
        await new Promise((resolve) => setImmediate(resolve));
      }
    }
  });
  const reader = (async () => {
    while (!stopping) {
      await db.getSession(sessionId).catch((err: unknown) => tally.count(`read ${(err as SessionDBError).code}`, err));
      await db.searchMessages("ts").catch((err: unknown) => tally.count(`read ${(err as SessionDBError).code}`, err));
      tally.reads++;
      await new Promise((resolve) => setImmediate(resolve));
    }
  })();
  return {
    tally,
    async stop() {
      stopping = true;
      await Promise.all([...appenders, reader]);
    },
  };
}

test("a daemon on PostgreSQL survives its connections terminated, a server restart and a statement_timeout, under load, in the same process", async (t) => {
  const url = server.fresh(t);
  const name = new URL(url).pathname.slice(1);
  const daemon = await startDaemon(t, url, { socketPath: `${shortTempDir(t)}/d.sock` });
  const db = await daemon.open(t);
  const admin = await adminPool(t, url);
  await db.createSession("s", "cli");
  const load = startLoad(db, "s", 4);
  const { tally } = load;
  let exited: Finished | null = null;
  void daemon.child.done.then((finished) => (exited = finished));
  const moreAcked = async (what: string) => {
    const before = tally.acked.size;
    await waitUntil(`appends acknowledged again after ${what} (${JSON.stringify([...tally.codes])})`, () => {
      if (exited !== null) throw new Error(`the daemon exited after ${what}: ${(exited as Finished).stderr}`);
      return tally.acked.size >= before + 30;
    });
  };
  try {
    await moreAcked("the start");

    const terminated = await terminateSessiondb(admin);
    assert.ok(terminated.includes("sessiondb daemon writer"), `the writer's connection was among those terminated: ${terminated.join(", ")}`);
    await moreAcked("pg_terminate_backend");

    await server().restart();
    await moreAcked("pg_ctl restart -m fast");

    await admin.query(`ALTER DATABASE "${name}" SET statement_timeout = '200ms'`);
    await terminateSessiondb(admin); // new connections take the database's setting
    const lock = await admin.connect();
    try {
      await lock.query("SET statement_timeout = 0; BEGIN; LOCK TABLE messages IN ACCESS EXCLUSIVE MODE");
      const busyBefore = tally.codes.get("BUSY") ?? 0;
      // Appends wait on the lock until the statement timeout cancels them: BUSY, not applied.
      await waitUntil("a statement timeout to fail an append", () => (tally.codes.get("BUSY") ?? 0) > busyBefore);
      await lock.query("COMMIT");
    } finally {
      lock.release();
    }
    await admin.query(`ALTER DATABASE "${name}" RESET statement_timeout`);
    await moreAcked("statement_timeout");
  } finally {
    await load.stop();
  }

  // The same process serves reads and writes afterwards.
  assert.equal((await controlOf(db).hello()).pid, daemon.pid);
  assert.ok(isAlive(daemon.pid));
  await db.appendMessage("s", { role: "user", content: "last" });
  tally.acked.add("last");

  const { rows } = await admin.query("SELECT content, count(*) AS n FROM messages WHERE session_id = 's' GROUP BY content");
  const present = new Map(rows.map((r) => [String(r.content), Number(r.n)]));
  for (const content of tally.acked) assert.equal(present.get(content), 1, `acknowledged ${content} is there exactly once`);
  for (const content of tally.unknown) assert.ok((present.get(content) ?? 0) <= 1, `${content} (outcome unknown) is there at most once`);
  for (const [content, code] of tally.notApplied) assert.equal(present.get(content), undefined, `${content} (answered ${code}: not applied) is not there`);
  for (const content of present.keys()) assert.ok(tally.acked.has(content) || tally.unknown.has(content), `${content} was acknowledged or its outcome unknown`);
  assert.equal((await db.getSession("s"))?.message_count, rows.reduce((sum, r) => sum + Number(r.n), 0));
  assert.ok(tally.reads > 0);
  const codes = [...tally.codes.keys()].filter((code) => !["BUSY", "OUTCOME_UNKNOWN", "UNAVAILABLE", "TIMEOUT", "read BUSY", "read UNAVAILABLE"].includes(code));
  assert.deepEqual(codes, [], `every failure had one of the documented codes: ${JSON.stringify([...tally.messages])}`);
});

/** The pg-direct-fault host's report after the test terminated its connection while its first append waited on a lock. */
async function hostWithAppendTerminated(t: TestContext, keys: "keyed" | "keyless"): Promise<{ first: string; contents: string[] }> {
  const url = server.fresh(t);
  const admin = await adminPool(t, url);
  const gate = join(shortTempDir(t), "gate");
  const child = spawnNode(compiledFixture("pg-direct-fault"), [url, gate, keys]);
  t.after(() => child.kill());
  await child.waitForLine("ready");
  const lock = await admin.connect();
  try {
    await lock.query("BEGIN; LOCK TABLE messages IN ACCESS EXCLUSIVE MODE");
    writeFileSync(gate, "go");
    // The host's append holds a checked-out connection, waiting on the lock: terminate it there.
    await waitUntil("the host's append to wait on the lock", async () => {
      const { rows } = await admin.query(
        "SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'sessiondb direct' AND wait_event_type = 'Lock'",
      );
      return rows.length > 0;
    });
    assert.ok((await terminateSessiondb(admin)).length > 0);
    await lock.query("COMMIT");
  } finally {
    lock.release();
  }
  return lastJsonLine<{ first: string; contents: string[] }>(await runToSuccess(child));
}

test("direct mode on PostgreSQL: a write whose connection is terminated mid-write is sent again with its key and applied once; the host keeps working", async (t) => {
  assert.deepEqual(await hostWithAppendTerminated(t, "keyed"), { first: "applied", contents: ["held", "after"] });
});

test("direct mode on PostgreSQL with idempotencyKeys false: the write whose connection is terminated gets UNAVAILABLE (not applied)", async (t) => {
  assert.deepEqual(await hostWithAppendTerminated(t, "keyless"), { first: "UNAVAILABLE", contents: ["after"] });
});

test("direct mode on PostgreSQL under load: connections terminated again and again and a server restart; every append resolves, each present exactly once", async (t) => {
  const url = server.fresh(t);
  const admin = await adminPool(t, url);
  const db = await openSessionDB({ path: url, mode: "direct", requestTimeoutMs: 120_000 });
  t.after(() => db.close());
  await db.createSession("s", "cli");
  const load = startLoad(db, "s", 4);
  const { tally } = load;
  const moreAcked = async (what: string) => {
    const before = tally.acked.size;
    await waitUntil(`appends acknowledged again after ${what} (${JSON.stringify([...tally.messages])})`, () => tally.acked.size >= before + 20);
  };
  let terminated = 0;
  try {
    await moreAcked("the start");
    for (let round = 0; round < 5; round++) {
      terminated += (await terminateSessiondb(admin)).length;
      await moreAcked(`pg_terminate_backend, round ${round + 1}`);
    }
    await server().restart();
    await moreAcked("pg_ctl restart -m fast");
  } finally {
    await load.stop();
  }
  assert.ok(terminated > 0, "connections of the host's pool were terminated");
  const writes = [...tally.codes].filter(([code]) => !code.startsWith("read "));
  assert.deepEqual(writes, [], `no append failed: ${JSON.stringify([...tally.messages])}`);
  const { rows } = await admin.query("SELECT content, COUNT(*)::int AS n FROM messages WHERE session_id = 's' GROUP BY content");
  const stored = new Map(rows.map((r) => [String(r.content), Number(r.n)]));
  assert.deepEqual([...stored].filter(([, n]) => n !== 1), [], "no append stored twice");
  assert.deepEqual([...tally.acked].filter((c) => !stored.has(c)), [], "every acknowledged append is there");
  assert.equal(stored.size, tally.acked.size, "and nothing else");
  assert.equal((await db.getSession("s"))?.message_count, stored.size);
});

test("auto mode on a PostgreSQL daemon that answers UNAVAILABLE but stays connected: the call rejects, the handle stays with that daemon (no failover to direct mode)", async (t) => {
  const url = server.fresh(t);
  const daemon = await startDaemon(t, url, { socketPath: `${shortTempDir(t)}/d.sock` });
  const db = await openSessionDB({ path: url, socketPath: daemon.socketPath, mode: "auto", requestTimeoutMs: 1_000 });
  t.after(() => db.close());
  await db.createSession("s", "cli");
  assert.equal(db.mode, "daemon");

  server().pause();
  let resumed: Promise<void> | null = null;
  // The server comes back whatever the call does (the old client waited 15 s for a hang-up, then went direct).
  const resume = setTimeout(() => (resumed = server().resume()), 3_000);
  t.after(() => clearTimeout(resume));
  const read = await db.getSession("s").then(() => "answered", (err: unknown) => (err as SessionDBError).code);
  const write = await db.appendMessage("s", { role: "user", content: "while down" }).then(() => "answered", (err: unknown) => (err as SessionDBError).code);
  assert.deepEqual([read, write, db.mode], ["UNAVAILABLE", "UNAVAILABLE", "daemon"]);

  await waitUntil("the 3 s timer to start the server again", () => resumed !== null);
  await resumed;
  await waitUntil("the daemon to serve again", () => db.appendMessage("s", { role: "user", content: "after" }).then(() => true, () => false));
  assert.equal(db.mode, "daemon");
  assert.equal((await controlOf(db).hello()).pid, daemon.pid);
  assert.deepEqual((await db.getMessages("s")).map((m) => m.content), ["after"]);
});

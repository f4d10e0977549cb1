/**
 * The wire protocol (SPEC §6) as any client may speak it, well or badly: raw bytes on a real
 * Unix socket to a real `serve` process. After every hostile case a well-behaved client must
 * still get its work done.
 */
import assert from "node:assert/strict";
import { realpathSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { test, type TestContext } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { openSessionDB, SessionDBError } from "../../src/index.js";
import { decodeBody, encodeFrame } from "../../src/protocol/frame-codec.js";
import { FrameDecoder } from "../../src/protocol/frame-decoder.js";
import { HEADER_BYTES } from "../../src/protocol/frame-limits.js";
import { controlOf, daemonStats, freshDbPath, shortTempDir, startDaemon, type DaemonProcess } from "../helpers/daemon.js";
import { rawAll, rawGet, rawWrite } from "../helpers/raw-db.js";
import { RawConnection, type Reply } from "../helpers/raw-connection.js";
import { buildSpecFile } from "../helpers/sqlite-files.js";
import { waitUntil, waitUntilSteady } from "../helpers/wait-until.js";

/** A well-behaved client, on a connection of its own, can still write, read back and search. */
async function assertHealthy(daemon: DaemonProcess): Promise<void> {
  const db = await openSessionDB({ path: daemon.dbPath, socketPath: daemon.socketPath, mode: "daemon" });
  try {
    const id = `healthy-${Math.random().toString(36).slice(2)}`;
    await db.createSession(id, "cli");
    const messageId = await db.appendMessage(id, { role: "user", content: "still serving pelicans" });
    assert.deepEqual((await db.getMessages(id)).map((m) => m.id), [messageId]);
    assert.ok((await db.searchMessages("pelicans")).some((hit) => hit.id === messageId));
  } finally {
    await db.close();
  }
}

function errorOf(reply: Reply): { code: string; message: string } {
  assert.equal(reply.ok, false, `expected an error reply, got ${JSON.stringify(reply)}`);
  return reply.error as { code: string; message: string };
}

/** A frame body by hand: the MessagePack of `{id, op, args: [<raw value bytes>]}`. */
function requestWithRawArg(id: number, op: string, rawArg: number[]): Buffer {
  const body = encodeFrame({ id, op, args: [] }).subarray(HEADER_BYTES);
  assert.equal(body[body.length - 1], 0x90, "args is the last key, an empty fixarray");
  return Buffer.concat([body.subarray(0, body.length - 1), Buffer.from([0x91, ...rawArg])]);
}

/** Sends one hostile thing on a fresh connection and expects an error frame, then the close. */
async function expectRejectedConnection(
  t: TestContext,
  daemon: DaemonProcess,
  send: (conn: RawConnection) => void,
  code: string,
): Promise<void> {
  const conn = await RawConnection.open(t, daemon.socketPath);
  send(conn);
  const reply = await conn.next();
  assert.equal(errorOf(reply).code, code, JSON.stringify(reply));
  assert.equal(await conn.closesWithin(), true, "the daemon must close that connection");
}

test("pipelined requests are answered as they finish and matched by id", async (t) => {
  const dbPath = freshDbPath(t);
  // Enough matching rows that the search is slow next to a ping.
  buildSpecFile(dbPath);
  rawWrite(dbPath, (db) => {
    db.prepare("INSERT INTO sessions (id, source, started_at) VALUES ('big', 'cli', 1)").run();
    const insert = db.prepare("INSERT INTO messages (session_id, role, content, timestamp) VALUES ('big', 'user', ?, ?)");
    for (let i = 0; i < 30_000; i++) insert.run(`common words about gannets number ${i}`, 1 + i / 1000);
    db.prepare("UPDATE sessions SET message_count = 30000 WHERE id = 'big'").run();
  });
  const daemon = await startDaemon(t, dbPath);
  const conn = await RawConnection.open(t, daemon.socketPath);

  conn.send(
    { id: 4_294_967_295, op: "searchMessages", args: ["gannets", { limit: 50 }] },
    { id: 7, op: "ping", args: [] },
    { id: 1000, op: "getSession", args: ["big"] },
    { id: 3, op: "appendMessage", args: ["big", { role: "assistant", content: "one more gannet" }] },
  );
  const replies = [await conn.next(), await conn.next(), await conn.next(), await conn.next()];

  assert.deepEqual(replies.map((r) => r.id).sort((a, b) => a - b), [3, 7, 1000, 4_294_967_295]);
  assert.equal(replies[0]!.id, 7, "the ping, sent second, is answered before the search sent first");
  const byId = new Map(replies.map((r) => [r.id, r]));
  assert.deepEqual(byId.get(7), { id: 7, ok: true, result: "pong" });
  const search = byId.get(4_294_967_295)!;
  assert.equal(search.ok, true);
  assert.equal((search.result as unknown[]).length, 50);
  assert.equal((byId.get(1000)!.result as { id: string }).id, "big");
  assert.equal(typeof byId.get(3)!.result, "number");
  assert.equal(conn.isClosed, false);
});

test("the client reassembles replies that span many reads or share one, concurrently, byte for byte", async (t) => {
  const daemon = await startDaemon(t, freshDbPath(t));
  const db = await openSessionDB({ path: daemon.dbPath, socketPath: daemon.socketPath, mode: "daemon" });
  t.after(() => db.close());
  // Contents of many sizes around the client's 64 KiB read buffer, with multi-byte characters
  // so that a byte out of place changes the text.
  const sizes = [1, 700, 65_000, 65_536, 70_001, 200_003, 1_000_000];
  const CHARACTERS = ["a", "é", "🐦", "z"];
  const contents = new Map<string, string>();
  for (const [i, size] of sizes.entries()) {
    const id = `s${i}`;
    const content = Array.from({ length: size }, (_, j) => CHARACTERS[(i + j) % CHARACTERS.length]).join("");
    contents.set(id, content);
    await db.createSession(id, "cli");
    await db.appendMessage(id, { role: "user", content });
  }
  // Bytes where text belongs, as another writer of the file may leave them: they reach the client
  // as a binary value, which must not stay a view of the read buffer the next replies overwrite.
  const blob = Buffer.from(Array.from({ length: 300 }, (_, i) => i % 251));
  await db.createSession("blob", "cli");
  rawWrite(daemon.dbPath, (raw) =>
    raw.prepare("INSERT INTO messages (session_id, role, content, timestamp) VALUES ('blob', 'user', ?, 1)").run(blob),
  );
  const blobRows = await db.getMessages("blob");
  // Pipelined, so small replies land in one read with the ends and starts of large ones.
  const reads = Array.from({ length: 60 }, (_, n) => {
    const id = `s${n % sizes.length}`;
    return n % 3 === 0
      ? db.getSession(id).then((row) => assert.equal(row?.message_count, 1))
      : db.getMessages(id).then((rows) => {
          assert.equal(rows.length, 1);
          assert.ok(rows[0]!.content === contents.get(id), `the content of ${id} came back intact`);
        });
  });
  await Promise.all(reads);
  assert.deepEqual(blobRows[0]!.content, blob, "a binary value read earlier is unchanged by the reads after it");
});

test("exportAll reads the socket only as fast as it is consumed: the daemon stops producing pages while the consumer stalls", async (t) => {
  const dbPath = freshDbPath(t);
  buildSpecFile(dbPath);
  // 8,000 sessions of 5 messages of 500 bytes: 40 pages of 200 sessions, about 20 MB, far more
  // than the socket's buffers and the client's few held pages.
  const SESSIONS = 8000;
  rawWrite(dbPath, (db) => {
    const session = db.prepare("INSERT INTO sessions (id, source, started_at, message_count) VALUES (?, 'cli', ?, 5)");
    const message = db.prepare("INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, 'user', ?, ?)");
    for (let i = 0; i < SESSIONS; i++) {
      session.run(`s${i}`, 1 + i);
      for (let j = 0; j < 5; j++) message.run(`s${i}`, `${i}:${j} `.padEnd(500, "x"), 1 + i);
    }
  });
  const daemon = await startDaemon(t, dbPath);
  const observer = await daemon.open(t);
  const exporter = await daemon.open(t);
  const pagesRead = async () => (await daemonStats(observer)).readers.completed;

  const before = await pagesRead();
  let exported = 0;
  let pagesWhileStalled = -1;
  for await (const item of exporter.exportAll()) {
    exported++;
    if (exported === 1) {
      // The stall: until the daemon has stopped producing pages (held back by the full socket),
      // or has produced them all (the client kept reading: the assertion below fails).
      pagesWhileStalled = (await waitUntilSteady("the pages the daemon produced while the consumer stalls", pagesRead)) - before;
    }
    assert.equal(item.messages.length, 5);
  }
  const pagesInAll = (await pagesRead()) - before;
  assert.equal(exported, SESSIONS, "every session was exported once the consumer went on");
  assert.ok(pagesInAll >= 40, `the export took ${pagesInAll} pages`);
  assert.ok(
    pagesWhileStalled < pagesInAll / 2,
    `while the consumer stalled the daemon produced ${pagesWhileStalled} of ${pagesInAll} pages: the client kept reading`,
  );
});

test("a declared length over 16 MiB gets FRAME_TOO_LARGE without the body being awaited, and that connection closes", async (t) => {
  const daemon = await startDaemon(t, freshDbPath(t));
  const other = await RawConnection.open(t, daemon.socketPath);
  await expectRejectedConnection(t, daemon, (conn) => {
    const header = Buffer.alloc(4);
    header.writeUInt32BE(16 * 1024 * 1024 + 1, 0);
    conn.sendBytes(header);
  }, "FRAME_TOO_LARGE");
  // Another connection opened before is untouched.
  assert.deepEqual(await other.call(1, "ping"), { id: 1, ok: true, result: "pong" });
  await assertHealthy(daemon);
});

test("a frame of exactly 16 MiB is read (and its content judged on its own)", async (t) => {
  const daemon = await startDaemon(t, freshDbPath(t));
  const conn = await RawConnection.open(t, daemon.socketPath);
  // A valid request padded with a huge string argument to exactly the limit.
  const base = encodeFrame({ id: 9, op: "ping", args: [""] }).subarray(HEADER_BYTES);
  const padding = 16 * 1024 * 1024 - (base.length - 1) - 5; // str32 header is 5 bytes
  const body = Buffer.concat([base.subarray(0, base.length - 1), Buffer.from([0xdb, 0, 0, 0, 0]), Buffer.alloc(padding, 0x61)]);
  body.writeUInt32BE(padding, base.length);
  assert.equal(body.length, 16 * 1024 * 1024);
  conn.sendBody(body);
  assert.deepEqual(await conn.next(), { id: 9, ok: true, result: "pong" });
  await assertHealthy(daemon);
});

test("an empty frame is a PROTOCOL error and closes that connection", async (t) => {
  const daemon = await startDaemon(t, freshDbPath(t));
  await expectRejectedConnection(t, daemon, (conn) => conn.sendBytes(Buffer.alloc(4)), "PROTOCOL");
  await assertHealthy(daemon);
});

test("bytes that are not one MessagePack value are a PROTOCOL error and close that connection", async (t) => {
  const daemon = await startDaemon(t, freshDbPath(t));
  const bodies: Array<[string, Buffer]> = [
    ["the never-used byte 0xc1", Buffer.from([0xc1, 0xc1, 0xc1])],
    ["a truncated array", Buffer.from([0x93, 0x01])],
    ["two values in one frame", Buffer.concat([encodeFrame({ id: 1, op: "ping", args: [] }).subarray(HEADER_BYTES), Buffer.from([0x01])])],
    ["a map with an integer key", Buffer.from([0x81, 0x01, 0x02])],
    ["nesting 100 levels deep", Buffer.from([...Array<number>(100).fill(0x91), 0xc0])],
    ["JSON text", Buffer.from('{"id":1,"op":"ping","args":[]}')],
  ];
  for (const [label, body] of bodies) {
    await t.test(label, async () => {
      await expectRejectedConnection(t, daemon, (conn) => conn.sendBody(body), "PROTOCOL");
    });
  }
  await assertHealthy(daemon);
});

test("MessagePack extension types are refused: PROTOCOL, and that connection closes", async (t) => {
  const daemon = await startDaemon(t, freshDbPath(t));
  const extensions: Array<[string, number[]]> = [
    ["timestamp 32 (fixext 4, type -1)", [0xd6, 0xff, 0x5f, 0x00, 0x00, 0x00]],
    ["timestamp 96 (ext 8, type -1)", [0xc7, 0x0c, 0xff, ...Array<number>(12).fill(0)]],
    ["fixext 1", [0xd4, 0x01, 0x00]],
    ["fixext 16", [0xd8, 0x02, ...Array<number>(16).fill(7)]],
    ["a msgpackr record definition (fixext 1, type 0x72)", [0xd4, 0x72, 0x40]],
    ["ext 32", [0xc9, 0x00, 0x00, 0x00, 0x01, 0x05, 0x00]],
  ];
  for (const [label, ext] of extensions) {
    await t.test(label, async () => {
      await expectRejectedConnection(t, daemon, (conn) => conn.sendBody(requestWithRawArg(1, "ping", ext)), "PROTOCOL");
    });
  }
  await assertHealthy(daemon);
});

test("an unknown op is a PROTOCOL error for that request only; the connection stays usable", async (t) => {
  const daemon = await startDaemon(t, freshDbPath(t));
  const conn = await RawConnection.open(t, daemon.socketPath);
  const ops = ["nope", "constructor", "__proto__", "toString", "hasOwnProperty", "__crash", "close", "mode", ""];
  for (const [i, op] of ops.entries()) {
    const reply = await conn.call(i + 1, op);
    assert.equal(errorOf(reply).code, "PROTOCOL", `op ${JSON.stringify(op)}`);
  }
  conn.send({ id: 50, op: 42, args: [] });
  const numeric = await conn.next();
  assert.equal(numeric.id, 50);
  assert.equal(errorOf(numeric).code, "PROTOCOL");
  assert.deepEqual(await conn.call(51, "ping"), { id: 51, ok: true, result: "pong" });
  assert.equal(conn.isClosed, false);
  await assertHealthy(daemon);
});

test("malformed requests and wrong argument types get their own error; nothing is written; the connection stays usable", async (t) => {
  const daemon = await startDaemon(t, freshDbPath(t));
  const conn = await RawConnection.open(t, daemon.socketPath);
  const invalid: Array<[string, unknown[]]> = [
    ["getSession", [42]],
    ["getMessages", []],
    ["createSession", ["x", 5]],
    ["createSession", [{ id: "x" }, "cli"]],
    ["appendMessage", ["s", "hello"]],
    ["appendMessage", ["s", { role: 5 }]],
    ["setSessionTitle", ["s", ["a"]]],
    ["listSessionsRich", [{ limit: "ten" }]],
    ["searchMessages", ["x", { roleFilter: "user" }]],
    ["updateTokenCounts", ["s", { inputTokens: "5" }]],
    ["getSession", ["a", "b", "c", "d"]],
    ["getSession", [Buffer.from("bytes")]],
  ];
  let id = 100;
  for (const [op, args] of invalid) {
    const reply = await conn.call(++id, op, args);
    assert.equal(errorOf(reply).code, "INVALID_ARGUMENT", `${op}(${JSON.stringify(args)}): ${JSON.stringify(reply)}`);
  }
  // Requests whose shape is wrong: still answered, matched by id when it has one, else id 0.
  const malformed: Array<[unknown, number]> = [
    [{ id: 200, op: "getSession", args: "s" }, 200],
    [{ id: 201, op: "ping", args: [], timeoutMs: "soon" }, 201],
    [{ id: 202, op: "ping", args: [], timeoutMs: -5 }, 202],
    [{ id: -1, op: "ping", args: [] }, 0],
    [{ id: 1.5, op: "ping", args: [] }, 0],
    [{ id: 2 ** 32, op: "ping", args: [] }, 0],
    [{ op: "ping", args: [] }, 0],
    [[1, "ping", []], 0],
    ["ping", 0],
    [null, 0],
  ];
  for (const [request, expectedId] of malformed) {
    conn.send(request);
    const reply = await conn.next();
    assert.equal(reply.id, expectedId, JSON.stringify(request));
    assert.equal(errorOf(reply).code, "PROTOCOL", JSON.stringify(request));
  }
  assert.deepEqual(await conn.call(300, "ping"), { id: 300, ok: true, result: "pong" });
  assert.deepEqual(await conn.call(301, "sessionCount"), { id: 301, ok: true, result: 0 });
  assert.deepEqual(rawAll(daemon.dbPath, "SELECT id FROM sessions"), []);
  await assertHealthy(daemon);
});

test("hello: protocol 1 is answered with the daemon's identity; protocol 2 is a PROTOCOL error", async (t) => {
  const daemon = await startDaemon(t, freshDbPath(t));
  const conn = await RawConnection.open(t, daemon.socketPath);
  const refused = await conn.call(1, "hello", [{ protocol: 2 }]);
  assert.equal(errorOf(refused).code, "PROTOCOL");
  assert.match(errorOf(refused).message, /protocol 2/);
  assert.equal(errorOf(await conn.call(2, "hello", [{ protocol: "1" }])).code, "PROTOCOL");
  // nil is the same as leaving it out: whatever the daemon speaks, said in the result.
  for (const [id, args] of [[4, [{ protocol: null }]], [5, [null]], [6, []]] as const) {
    const open = await conn.call(id, "hello", [...args]);
    assert.equal(open.ok, true, JSON.stringify(args));
    assert.equal((open.result as Record<string, unknown>).protocol, 1);
  }
  const hello = await conn.call(3, "hello", [{ protocol: 1 }]);
  assert.equal(hello.ok, true);
  const result = hello.result as Record<string, unknown>;
  assert.equal(result.server, "sessiondb");
  assert.equal(result.protocol, 1);
  assert.equal(result.schemaVersion, 6);
  assert.equal(result.pid, daemon.pid);
  assert.equal(typeof result.version, "string");
  await assertHealthy(daemon);
});

test("__proto__ keys from a client are plain data: no prototype is changed, no option is injected", async (t) => {
  const daemon = await startDaemon(t, freshDbPath(t));
  const conn = await RawConnection.open(t, daemon.socketPath);
  const evil = () => JSON.parse('{"__proto__": {"model": "polluted", "source": "polluted", "systemPrompt": "polluted", "limit": 0}}') as unknown;
  // At the top of the request, inside an options object, inside a message, inside tool calls.
  const topLevel = { ...(evil() as object), id: 1, op: "createSession", args: ["p1", "cli"] };
  Object.defineProperty(topLevel, "__proto__", { value: { timeoutMs: 1, op: "shutdown" }, enumerable: true });
  conn.send(topLevel);
  assert.deepEqual(await conn.next(), { id: 1, ok: true, result: "p1" });
  assert.deepEqual(await conn.call(2, "createSession", ["p2", "cli", evil()]), { id: 2, ok: true, result: "p2" });
  const appended = await conn.call(3, "appendMessage", ["p2", { ...(evil() as object), role: "user", content: "c", toolCalls: [evil()] }]);
  assert.equal(appended.ok, true);
  const listed = await conn.call(4, "listSessionsRich", [evil()]);
  assert.equal((listed.result as unknown[]).length, 2, "an injected limit of 0 was not applied");

  const rows = rawAll<{ id: string; model: string | null; system_prompt: string | null; source: string }>(
    daemon.dbPath,
    "SELECT id, model, system_prompt, source FROM sessions ORDER BY id",
  );
  assert.deepEqual(rows, [
    { id: "p1", model: null, system_prompt: null, source: "cli" },
    { id: "p2", model: null, system_prompt: null, source: "cli" },
  ]);
  // A later, ordinary request sees no inherited options either.
  const db = await daemon.open(t);
  await db.createSession("p3", "cli", {});
  assert.equal((await db.getSession("p3"))?.model, null);
  assert.equal((await db.listSessionsRich()).length, 3);
  await assertHealthy(daemon);
});

test("clients that vanish mid-request: each write is whole or absent, and other clients are served throughout", async (t) => {
  const daemon = await startDaemon(t, freshDbPath(t));
  const steady = await daemon.open(t);
  await steady.createSession("steady", "cli");
  let steadyWrites = 0;
  let stop = false;
  const steadyLoop = (async () => {
    while (!stop) {
      await steady.appendMessage("steady", { role: "user", content: `steady ${steadyWrites}` });
      steadyWrites++;
    }
  })();

  const ROUNDS = 30;
  for (let i = 0; i < ROUNDS; i++) {
    const conn = await RawConnection.open(t, daemon.socketPath);
    conn.send(
      { id: 1, op: "createSession", args: [`gone-${i}`, "cli"] },
      { id: 2, op: "appendMessage", args: [`gone-${i}`, { role: "user", content: `vanishing ${i}`, toolCalls: [{ id: "a" }, { id: "b" }] }] },
      { id: 3, op: "exportAll", args: [] },
      { id: 4, op: "searchMessages", args: ["steady"] },
    );
    // Half of them also leave half a frame behind.
    if (i % 2 === 1) conn.sendBytes(Buffer.from([0x00, 0x00, 0x01, 0x00, 0x83, 0xa2]));
    if (i % 3 === 1) await sleep(1);
    conn.destroy();
  }
  // Let everything the vanished clients queued finish.
  await waitUntil("the vanished clients' requests to finish", async () => (await daemonStats(steady)).queueDepth === 0);
  stop = true;
  await steadyLoop;
  assert.ok(steadyWrites > 0);

  const sessions = rawAll<{ id: string; message_count: number; tool_call_count: number; real: number }>(
    daemon.dbPath,
    `SELECT s.id, s.message_count, s.tool_call_count, (SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id) AS real
     FROM sessions s WHERE s.id LIKE 'gone-%'`,
  );
  for (const s of sessions) {
    assert.equal(s.message_count, s.real, `${s.id}: counter and rows agree`);
    assert.ok(s.real <= 1);
    assert.equal(s.tool_call_count, 2 * s.real, `${s.id}: tool calls counted with their message`);
  }
  const orphans = rawGet<{ n: number }>(daemon.dbPath, "SELECT COUNT(*) AS n FROM messages WHERE session_id NOT IN (SELECT id FROM sessions)");
  assert.equal(orphans?.n, 0);
  assert.equal((await steady.getSession("steady"))?.message_count, steadyWrites);
  assert.equal(rawGet<{ integrity_check: string }>(daemon.dbPath, "PRAGMA integrity_check")?.integrity_check, "ok");
  await waitUntil("the vanished connections gone", async () => (await daemonStats(steady)).clients === 1);
  await assertHealthy(daemon);
});

test("the client's control ops are typed: hello names the daemon and its file, ping answers pong, stats counts the writes, fault ops are refused when off", async (t) => {
  const daemon = await startDaemon(t, freshDbPath(t));
  const db = await daemon.open(t);
  const control = controlOf(db);
  const hello = await control.hello();
  assert.equal(hello.pid, daemon.pid);
  assert.equal(hello.database, control.server.database);
  assert.equal(hello.database, db.files.db);
  assert.equal(await control.ping(), "pong");
  await db.createSession("typed", "cli");
  const stats = await control.stats();
  assert.equal(stats.pid, daemon.pid);
  assert.ok(stats.writer.writes >= 1);
  assert.equal(stats.readers.threads, 2);
  await assert.rejects(control.fault("faultCrashWriter"), { code: "INVALID_ARGUMENT" });
});

test("a socket whose hello is not a sessiondb daemon speaking protocol 1 is no daemon: daemon mode is UNAVAILABLE saying so, auto mode goes direct", async (t) => {
  const dir = shortTempDir(t);
  const dbPath = join(dir, "state.db");
  for (const hello of [
    { server: "another-server", version: "9", protocol: 1, schemaVersion: 6, pid: process.pid, database: realpathSync(dir) + "/state.db" },
    { server: "sessiondb", version: "9.0.0", protocol: 2, schemaVersion: 6, pid: process.pid, database: realpathSync(dir) + "/state.db" },
    "pong",
  ]) {
    const socketPath = join(dir, "impostor.sock");
    const server = createServer((socket) => {
      const decoder = new FrameDecoder(1 << 20);
      socket.on("error", () => undefined);
      socket.on("data", (chunk: Buffer) => {
        for (const body of decoder.push(chunk)) {
          const request = decodeBody(body) as { id: number };
          socket.write(encodeFrame({ id: request.id, ok: true, result: hello }));
        }
      });
    });
    await new Promise<void>((resolve) => server.listen(socketPath, resolve));
    try {
      const refused = await openSessionDB({ path: dbPath, socketPath, mode: "daemon" }).then(
        async (db) => {
          await db.close();
          return `a hello of ${JSON.stringify(hello)} was taken for a daemon`;
        },
        (err: unknown) => err,
      );
      assert.ok(refused instanceof SessionDBError && refused.code === "UNAVAILABLE", String(refused));
      assert.match(refused.message, /not a sessiondb daemon speaking protocol 1/);
      const auto = await openSessionDB({ path: dbPath, socketPath, mode: "auto" });
      assert.equal(auto.mode, "direct");
      await auto.close();
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  }
});

test("an error code the client does not know (a newer daemon's) is INTERNAL, its code and message kept in the message, as the Python client does", async (t) => {
  const dir = shortTempDir(t);
  const dbPath = join(dir, "state.db");
  const socketPath = join(dir, "newer.sock");
  const hello = { server: "sessiondb", version: "9.0.0", protocol: 1, schemaVersion: 6, pid: process.pid, database: realpathSync(dir) + "/state.db" };
  const server = createServer((socket) => {
    const decoder = new FrameDecoder(1 << 20);
    socket.on("error", () => undefined);
    socket.on("data", (chunk: Buffer) => {
      for (const body of decoder.push(chunk)) {
        const request = decodeBody(body) as { id: number; op: string };
        socket.write(encodeFrame(request.op === "hello"
          ? { id: request.id, ok: true, result: hello }
          : { id: request.id, ok: false, error: { code: "FROM_A_NEWER_DAEMON", message: "the shard is rebalancing" } }));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(socketPath, resolve));
  // Node runs the after hooks in order: the client closes first, so the server has no connection left to wait for.
  const db = await openSessionDB({ path: dbPath, socketPath, mode: "daemon" });
  t.after(() => db.close());
  t.after(() => new Promise((resolve) => server.close(resolve)));
  const err = await db.getSession("s").then(() => null, (e: unknown) => e);
  assert.ok(err instanceof SessionDBError, String(err));
  assert.equal(err.code, "INTERNAL");
  assert.equal(err.message, 'the shard is rebalancing (code "FROM_A_NEWER_DAEMON", unknown to this client)');
});

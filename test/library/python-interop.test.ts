/**
 * File compatibility with the reference (SPEC §1, §4): a Python writer that does exactly what
 * hermes_state.py does, using only the sqlite3 module, shares one file with sessiondb at the same
 * time, and each side reads, counts and searches what the other wrote.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import { openSessionDB } from "../../src/index.js";
import {
  compiledFixture, gatePath, lastJsonLine, releaseTogether, runToSuccess, sourceFixture, spawnNode, spawnPython, type Child,
} from "../helpers/processes.js";
import { masterEntries, schemaCookie, versionRows, withRaw } from "../helpers/sqlite-files.js";
import { tempDir } from "../helpers/temp-dir.js";
import type { Appended, WriterConfig, WriterReport } from "../fixtures/direct-writer.js";

const PYTHON_WRITER = sourceFixture("hermes_writer.py");

interface PythonDump {
  sessions: Record<string, { source: string; message_count: number; tool_call_count: number }>;
  realCounts: Record<string, number>;
  contents: string[];
  fts: Record<string, number>;
  integrity: string;
}

interface PythonWriteConfig {
  db: string;
  gate?: string;
  session: string;
  source: string;
  count: number;
  word: string;
  toolCallsEvery?: number;
}

function pythonWriter(config: PythonWriteConfig): Child {
  return spawnPython(PYTHON_WRITER, ["write", JSON.stringify(config)]);
}

async function pythonDump(path: string, words: string[]): Promise<PythonDump> {
  return lastJsonLine<PythonDump>(await runToSuccess(spawnPython(PYTHON_WRITER, ["dump", path, ...words])));
}

const PER_WRITER = 120;
const IN_PROCESS = 60;

test("Python and sessiondb processes write one file at once and each sees the other's work", async (t) => {
  const dir = tempDir(t);
  const path = join(dir, "state.db");
  const db = await openSessionDB({ path, mode: "direct" });
  t.after(() => db.close());
  await db.createSession("ts-main", "ts-test", { model: "ts-model" });
  const cookie = withRaw(path, schemaCookie);

  const gate = gatePath(dir);
  const python = ["py-1", "py-2"].map((session) =>
    pythonWriter({ db: path, gate, session, source: "python-hermes", count: PER_WRITER, word: "pymarker", toolCallsEvery: 4 }),
  );
  const node = ["node-1", "node-2"].map((ownSession) => {
    const config: WriterConfig = { db: path, gate, ownSession, source: "node-child", appends: PER_WRITER, word: "nodemarker", toolCallsEvery: 5 };
    return spawnNode(compiledFixture("direct-writer"), [JSON.stringify(config)]);
  });
  const children = [...python, ...node];
  t.after(() => children.forEach((c) => c.kill()));
  await releaseTogether(children, gate);

  const inProcess: Appended[] = [];
  for (let i = 0; i < IN_PROCESS; i++) {
    const content = `tsmarker written in the test process number ${i}`;
    inProcess.push({ id: await db.appendMessage("ts-main", { role: "user", content }), sessionId: "ts-main", content, toolCalls: 0 });
  }
  const reports = new Map<string, Appended[]>([["ts-main", inProcess]]);
  for (const child of children) {
    const report = lastJsonLine<WriterReport>(await runToSuccess(child));
    assert.ok(report.ok, JSON.stringify(report));
    const first = report.appended[0];
    assert.ok(first);
    reports.set(first.sessionId, report.appended);
  }

  // sessiondb reads what Python wrote.
  for (const session of ["py-1", "py-2"]) {
    const written = reports.get(session) ?? [];
    const row = await db.getSession(session);
    assert.equal(row?.source, "python-hermes");
    assert.equal(row?.model, "python-model");
    assert.equal(row?.message_count, PER_WRITER);
    assert.equal(row?.tool_call_count, written.reduce((n, a) => n + a.toolCalls, 0));
    const messages = await db.getMessages(session);
    assert.deepEqual(messages.map((m) => [m.id, m.content]), written.map((a) => [a.id, a.content]));
    assert.deepEqual(messages[0]?.tool_calls, [{ id: "py0", type: "function" }]);
  }
  const listed = await db.listSessionsRich({ limit: 10 });
  assert.deepEqual(new Set(listed.map((s) => s.id)), new Set(["ts-main", "py-1", "py-2", "node-1", "node-2"]));
  assert.equal(listed.find((s) => s.id === "py-2")?.preview, reports.get("py-2")?.[0]?.content);
  const pyHits = await db.searchMessages("pymarker", { limit: 1000 });
  assert.equal(pyHits.length, 2 * PER_WRITER);
  assert.ok(pyHits.every((h) => h.source === "python-hermes" && h.session_id.startsWith("py-")));
  assert.equal((await db.searchMessages("nodemarker", { limit: 1000 })).length, 2 * PER_WRITER);

  // Python reads what sessiondb wrote, in this process and in the node children.
  const seen = await pythonDump(path, ["pymarker", "nodemarker", "tsmarker"]);
  assert.equal(seen.integrity, "ok");
  assert.deepEqual(seen.fts, { pymarker: 2 * PER_WRITER, nodemarker: 2 * PER_WRITER, tsmarker: IN_PROCESS });
  assert.deepEqual(Object.keys(seen.sessions).sort(), ["node-1", "node-2", "py-1", "py-2", "ts-main"]);
  for (const [id, session] of Object.entries(seen.sessions)) {
    const written = reports.get(id) ?? [];
    assert.equal(session.message_count, seen.realCounts[id], `message_count of ${id} as Python sees it`);
    assert.equal(session.message_count, written.length);
    assert.equal(session.tool_call_count, written.reduce((n, a) => n + a.toolCalls, 0), `tool_call_count of ${id}`);
  }
  const contents = new Set(seen.contents);
  for (const written of reports.values()) for (const a of written) assert.ok(contents.has(a.content), a.content);

  withRaw(path, (raw) => assert.equal(schemaCookie(raw), cookie, "the reference's start-up changed nothing in sessiondb's file"));
});

test("a file Python creates from the SPEC schema is opened by sessiondb without migrating anything", async (t) => {
  const dir = tempDir(t);
  const path = join(dir, "python-made.db");
  await runToSuccess(spawnPython(PYTHON_WRITER, ["create", path]));
  await runToSuccess(pythonWriter({ db: path, session: "py-fresh", source: "python-hermes", count: 5, word: "freshpy" }));
  const before = withRaw(path, (raw) => ({ cookie: schemaCookie(raw), master: masterEntries(raw) }));

  const db = await openSessionDB({ path, mode: "direct" });
  t.after(() => db.close());
  withRaw(path, (raw) => {
    assert.equal(schemaCookie(raw), before.cookie, "no DDL ran");
    assert.deepEqual(masterEntries(raw), before.master);
    assert.deepEqual(versionRows(raw), [6]);
  });
  assert.equal((await db.getMessages("py-fresh")).length, 5);
  assert.equal((await db.searchMessages("freshpy")).length, 5);
  await db.appendMessage("py-fresh", { role: "assistant", content: "freshpy answered by sessiondb", toolCalls: [{ id: "x" }] });
  await db.close();

  const seen = await pythonDump(path, ["freshpy"]);
  assert.deepEqual(seen.sessions["py-fresh"], { source: "python-hermes", message_count: 6, tool_call_count: 1 });
  assert.equal(seen.realCounts["py-fresh"], 6);
  assert.equal(seen.fts.freshpy, 6);

  // And the file sessiondb creates has the same objects, with the same SQL, as the one Python made.
  const ours = join(dir, "sessiondb-made.db");
  await (await openSessionDB({ path: ours, mode: "direct" })).close();
  assert.deepEqual(withRaw(ours, masterEntries), before.master);
});

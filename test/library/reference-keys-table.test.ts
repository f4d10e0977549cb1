/**
 * A file holding the idempotency keys table (issue 25) is still the reference's file: a writer
 * doing exactly what hermes_state.py does (init_schema, create, append) writes it and dumps it,
 * integrity ok, and sessiondb's keys still answer after it.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import { openSessionDB } from "../../src/index.js";
import { lastJsonLine, runToSuccess, sourceFixture, spawnPython } from "../helpers/processes.js";
import { rawAll } from "../helpers/raw-db.js";
import { tempDir } from "../helpers/temp-dir.js";

const PYTHON_WRITER = sourceFixture("hermes_writer.py");

test("the reference writer opens, writes and checks a file that has sessiondb_idempotency; the keys still hold", async (t) => {
  const path = join(tempDir(t), "state.db");
  const db = await openSessionDB({ path, mode: "direct" });
  t.after(() => db.close());
  await db.createSession("ts", "cli");
  const id = await db.appendMessage("ts", { role: "user", content: "keyed before python" }, { idempotencyKey: "before" });
  assert.equal(rawAll(path, "SELECT count(*) AS n FROM sessiondb_idempotency")[0]?.n, 1);

  const config = { db: path, session: "py", source: "python-hermes", count: 20, word: "pyword" };
  const report = lastJsonLine<{ ok: boolean; appended: unknown[] }>(await runToSuccess(spawnPython(PYTHON_WRITER, ["write", JSON.stringify(config)])));
  assert.equal(report.ok, true);
  assert.equal(report.appended.length, 20);
  const dump = lastJsonLine<{ integrity: string; fts: Record<string, number>; realCounts: Record<string, number> }>(
    await runToSuccess(spawnPython(PYTHON_WRITER, ["dump", path, "pyword", "keyed"])),
  );
  assert.equal(dump.integrity, "ok");
  assert.deepEqual(dump.realCounts, { py: 20, ts: 1 });
  assert.deepEqual(dump.fts, { pyword: 20, keyed: 1 });

  assert.equal(await db.appendMessage("ts", { role: "user", content: "keyed before python" }, { idempotencyKey: "before" }), id);
  assert.equal((await db.getSession("py"))?.message_count, 20);
  assert.equal(await db.messageCount({ sessionId: "ts" }), 1);
});

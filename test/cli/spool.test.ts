/**
 * `sessiondb spool` lists this user's pending spooled writes (per database: how many, the oldest,
 * the file's size) and `sessiondb spool replay` applies them, each once, in order, saying how
 * many (docs/cli.md); a database that cannot take its records yet fails the command (exit 1)
 * and leaves them.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import { SpoolFile } from "../../src/spool/spool-file.js";
import type { ReplayReport, SpoolReport } from "../../src/cli/commands/spool.js";
import { assertFails, runCli, runJson } from "../helpers/cli.js";
import { seededDatabase, shortTempDir } from "../helpers/daemon.js";
import { rawAll } from "../helpers/raw-db.js";

function contents(path: string): string[] {
  return rawAll<{ content: string }>(path, "SELECT content FROM messages WHERE session_id = 's' ORDER BY timestamp, id").map((r) => r.content);
}

test("spool lists the pending records per database; spool replay applies them once, in order, and says how many", async (t) => {
  const a = await seededDatabase(t);
  const b = await seededDatabase(t);
  const dir = join(shortTempDir(t), "spool");
  const spoolA = new SpoolFile(a, dir);
  await spoolA.append("a-1", "appendMessage", ["s", { role: "user", content: "a one" }], 1_700_000_000);
  await spoolA.append("a-2", "appendMessage", ["s", { role: "user", content: "a two" }], 1_700_000_100);
  // Refused for good: no such session. Acknowledged and dropped, said in the report.
  await spoolA.append("a-3", "appendMessage", ["nope", { role: "user", content: "orphan" }], 1_700_000_200);
  const spoolB = new SpoolFile(b, dir);
  await spoolB.append("b-1", "endSession", ["s", "spooled end"], 1_700_000_300);

  const listed = await runJson<SpoolReport[]>(a, ["spool", "--dir", dir]);
  const byDb = new Map(listed.map((r) => [r.database, r]));
  assert.equal(listed.length, 2);
  assert.deepEqual({ ...byDb.get(a), bytes: 0 }, { database: a, file: spoolA.path, pending: 3, oldest: 1_700_000_000, bytes: 0, error: null });
  assert.equal(byDb.get(a)?.bytes, spoolA.size());
  assert.equal(byDb.get(b)?.pending, 1);
  const text = await runCli(a, ["spool", "--dir", dir]);
  assert.equal(text.code, 0, text.stderr);
  assert.match(text.stdout, new RegExp(`${a}: 3 pending, oldest \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d`));
  assert.match(text.stdout, new RegExp(`${b}: 1 pending`));

  const replayed = await runCli(a, ["spool", "replay", "--dir", dir]);
  assert.equal(replayed.code, 0, replayed.stderr);
  assert.match(replayed.stdout, new RegExp(`${a}: applied 2 writes, dropped 1 refused for good \\(appendMessage CONSTRAINT`));
  assert.match(replayed.stdout, new RegExp(`${b}: applied 1 write\\b`));
  assert.deepEqual(contents(a), ["a one", "a two"]);
  assert.equal(rawAll<{ end_reason: string }>(b, "SELECT end_reason FROM sessions WHERE id = 's'")[0]?.end_reason, "spooled end");
  // Nothing left: a second run applies nothing and lists nothing.
  assert.deepEqual(await runJson<ReplayReport[]>(a, ["spool", "replay", "--dir", dir]), []);
  assert.deepEqual(await runJson<SpoolReport[]>(a, ["spool", "--dir", dir]), []);
  assert.equal((await runCli(a, ["spool", "--dir", dir])).stdout.trim(), "no pending spooled writes");
  assert.deepEqual(contents(a), ["a one", "a two"]);
});

test("spool replay fails (exit 1) for a database that cannot take its records, leaving them, and applies the others", async (t) => {
  const a = await seededDatabase(t);
  const dir = join(shortTempDir(t), "spool");
  const gone = join(shortTempDir(t), "gone.db");
  await new SpoolFile(gone, dir).append("g-1", "appendMessage", ["s", { role: "user", content: "nowhere" }], 1);
  await new SpoolFile(a, dir).append("a-1", "appendMessage", ["s", { role: "user", content: "here" }], 2);
  const result = await runCli(a, ["spool", "replay", "--dir", dir]);
  assertFails(result, 1, `error NOT_FOUND: ${gone}`);
  assert.match(result.stdout, new RegExp(`${gone}: applied 0 writes; 1 write left \\(NOT_FOUND`));
  assert.match(result.stdout, new RegExp(`${a}: applied 1 write`));
  assert.deepEqual(contents(a), ["here"]);
  const left = await runJson<SpoolReport[]>(a, ["spool", "--dir", dir]);
  assert.deepEqual(left.map((r) => [r.database, r.pending]), [[gone, 1]]);
});

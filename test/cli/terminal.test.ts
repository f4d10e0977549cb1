/**
 * `sessiondb list` as people see it: on a real pseudo-terminal 80 and 60 columns wide, with
 * Hermes-style ids (which all start with the date) and a lineage of long titles; and piped,
 * where nothing is ever cut.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { before, after, describe, test } from "node:test";
import { displayWidth } from "../../src/cli/table-layout.js";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { openSessionDB } from "../../src/index.js";
import { runCli } from "../helpers/cli.js";
import { runCliOnPty, stripColors } from "../helpers/pty.js";
import { tempDir, removeTree } from "../helpers/temp-dir.js";

const BASE_TITLE = "migrating the session store to the new schema";
const IDS = Array.from({ length: 12 }, (_, i) => `20260901_1430${String(10 + i).padStart(2, "0")}_a1b2c${i % 10}`);

/** Lines of the table: the header and one per session (not the `more may follow` note). */
function tableLines(output: string): string[] {
  return stripColors(output).trimEnd().split("\n").filter((l) => !l.startsWith("more may follow"));
}

describe("list on a terminal and through a pipe", () => {
  let dir = "";
  let db = "";

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "sdb-term-"));
    db = join(dir, "state.db");
    const store = await openSessionDB({ path: db, mode: "direct" });
    try {
      for (const [i, id] of IDS.entries()) {
        await store.createSession(id, i % 2 === 0 ? "telegram" : "cli");
        await store.setSessionTitle(id, i === 0 ? BASE_TITLE : `${BASE_TITLE} #${i + 1}`);
        await store.appendMessage(id, { role: "user", content: `step ${i + 1}: a long first message that previews the conversation` });
      }
    } finally {
      await store.close();
    }
  });

  after(() => removeTree(dir));

  for (const columns of [80, 60]) {
    test(`at ${columns} columns: each id is its shortest unique prefix, each title keeps its #N, no line is wider`, async () => {
      const result = await runCliOnPty(db, ["list", "--limit", "12"], { columns });
      assert.equal(result.code, 0, result.output);
      const lines = tableLines(result.output);
      assert.match(lines[0]!, /^ID +TITLE/);
      for (const line of lines) assert.ok([...line].length <= columns, `wider than ${columns}: ${JSON.stringify(line)}`);
      const rows = lines.slice(1);
      assert.equal(rows.length, IDS.length);
      for (const [n, row] of rows.entries()) {
        const shown = row.split(/ +/)[0]!;
        const id = IDS[IDS.length - 1 - n]!;
        assert.ok(id.startsWith(shown) && shown.length < id.length, `${shown} is a shortened ${id}`);
        // One character less would name several sessions (they differ only from there on).
        assert.equal(IDS.filter((other) => other.startsWith(shown.slice(0, -1))).length > 1, true);
        const number = IDS.length - n;
        if (number > 1) assert.match(row, new RegExp(`#${number}( |$)`), `the title keeps #${number}: ${row}`);
        assert.match(row, /migrat/, "the title's start stays too");
      }
      // What the table shows is what show/title/delete accept.
      const shown = rows[0]!.split(/ +/)[0]!;
      const title = await runCli(db, ["title", shown]);
      assert.equal(title.stdout.trim(), `${BASE_TITLE} #12`, title.stderr);
    });
  }

  test("a wide terminal shows whole ids; $COLUMNS overrides the terminal's width", async () => {
    const wide = await runCliOnPty(db, ["list", "--limit", "3"], { columns: 200 });
    assert.equal(wide.code, 0, wide.output);
    for (const id of IDS.slice(-3)) assert.ok(stripColors(wide.output).includes(id), `whole id ${id} on 200 columns`);
    const narrowed = await runCliOnPty(db, ["list", "--limit", "3"], { columns: 200, env: { COLUMNS: "70" } });
    for (const line of tableLines(narrowed.output)) assert.ok([...line].length <= 70, `wider than $COLUMNS: ${line}`);
  });

  test("piped: tab-separated lines with whole ids, titles and previews, whatever $COLUMNS says", async () => {
    const result = await runCli(db, ["list", "--limit", "12"], { env: { COLUMNS: "40" } });
    assert.equal(result.code, 0, result.stderr);
    assert.doesNotMatch(result.stdout, /\x1b|…/, "no colours, nothing cut");
    const lines = result.stdout.trimEnd().split("\n");
    assert.deepEqual(lines[0]!.split("\t"), ["ID", "TITLE", "SOURCE", "STARTED", "ACTIVE", "MSGS", "PREVIEW"]);
    const rows = lines.slice(1).map((l) => l.split("\t"));
    assert.deepEqual(rows.map((r) => r[0]), [...IDS].reverse());
    assert.equal(rows[0]![1], `${BASE_TITLE} #12`);
    assert.equal(rows[0]![6], "step 12: a long first message that previews the conversation");
    assert.match(result.stderr, /^more may follow: --offset 12$/m, "the note goes to stderr, out of the data");
  });
});

test("wide CJK titles are cut by terminal columns and keep their #N", async (t) => {
  const db = join(tempDir(t), "state.db");
  const store = await openSessionDB({ path: db, mode: "direct" });
  try {
    for (const n of [2, 3]) {
      await store.createSession(`20260902_0900${n}0_ffff${n}`, "telegram");
      await store.setSessionTitle(`20260902_0900${n}0_ffff${n}`, `部署聊天发送服务的第二阶段计划与回滚步骤 #${n}`);
    }
  } finally {
    await store.close();
  }
  const result = await runCliOnPty(db, ["list"], { columns: 60 });
  assert.equal(result.code, 0, result.output);
  const lines = tableLines(result.output);
  for (const line of lines) assert.ok(displayWidth(line) <= 60, `wider than 60 columns: ${line}`);
  assert.match(lines[1]!, /部署.*….*#3 /);
  assert.match(lines[2]!, /部署.*….*#2 /);
});

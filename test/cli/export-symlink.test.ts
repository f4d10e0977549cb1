/**
 * `export -o FILE` into a shared directory (issue 12, item 12): its temporary file is created
 * exclusively under an unpredictable name, so symbolic links planted at the names it could
 * predictably use are never followed, and what they point at is never written.
 */
import assert from "node:assert/strict";
import { lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { runCli, runJson, seedDatabase } from "../helpers/cli.js";
import { tempDir } from "../helpers/temp-dir.js";

/** Pids the next processes will likely get (Linux hands them out in order). */
function nextPids(count: number): number[] {
  const last = Number(readFileSync("/proc/sys/kernel/ns_last_pid", "utf8"));
  return Array.from({ length: count }, (_, i) => last + 1 + i);
}

test("export -o never writes through a planted symlink at a predictable temporary name", async (t) => {
  const dir = tempDir(t);
  const db = join(dir, "state.db");
  await seedDatabase(db);
  const shared = join(dir, "shared");
  const victim = join(dir, "victim.txt");
  writeFileSync(victim, "precious\n");
  mkdirSync(shared);
  const file = join(shared, "out.jsonl");
  // The names a pid-based temporary file would take, and a plain fixed one.
  const planted = [...nextPids(3000).map((pid) => join(shared, `.out.jsonl.${pid}.partial`)), join(shared, ".out.jsonl.partial")];
  for (const link of planted) symlinkSync(victim, link);

  const report = await runJson<{ exported: number; file: string }>(db, ["export", "-o", file]);
  assert.equal(readFileSync(victim, "utf8"), "precious\n", "the symlinks' target was not written");
  for (const link of planted) {
    assert.ok(lstatSync(link).isSymbolicLink(), `${link} is still the planted link`);
    assert.equal(readlinkSync(link), victim);
  }
  assert.ok(lstatSync(file).isFile());
  assert.equal(readFileSync(file, "utf8"), (await runCli(db, ["export"])).stdout);
  assert.equal(report.file, file);
  const leftovers = readdirSync(shared).filter((name) => !lstatSync(join(shared, name)).isSymbolicLink() && name !== "out.jsonl");
  assert.deepEqual(leftovers, [], "no temporary file is left behind");
});

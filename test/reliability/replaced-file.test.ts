/**
 * A database file replaced under a running daemon (`mv backup.db state.db`, SPEC §5): the daemon
 * notices that the path no longer names the file it has open, says so and stops; no write
 * acknowledged after the swap is lost with the old file; auto-mode clients carry on with the file
 * now at the path.
 */
import assert from "node:assert/strict";
import { renameSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { openSessionDB, SessionDBError } from "../../src/index.js";
import { shortTempDir } from "../helpers/daemon.js";
import { rawAll } from "../helpers/raw-db.js";
import { withRaw } from "../helpers/sqlite-files.js";
import { checkFile, serve } from "./harness.js";

const BEFORE_SWAP = 20;
const AFTER_SWAP = 60;
/** A bound on noticing the swap (checked every 100 ms), not a timing: generous for a saturated machine. */
const EXIT_LIMIT_MS = 120_000;

test("mv backup.db state.db under a running daemon: the daemon stops, and every write acknowledged after the swap is in the new file", async (t) => {
  const dir = shortTempDir(t);
  const dbPath = join(dir, "state.db");
  const backup = join(dir, "backup.db");
  const seed = await openSessionDB({ path: dbPath, mode: "direct" });
  await seed.createSession("s", "cli");
  await seed.appendMessage("s", { role: "user", content: "in both files" });
  await seed.close();
  withRaw(dbPath, (db) => db.exec(`VACUUM INTO '${backup}'`));

  const daemon = await serve(t, dbPath, { readers: 1 });
  const db = await openSessionDB({ path: dbPath });
  t.after(() => db.close());
  assert.equal(db.mode, "daemon");
  for (let i = 0; i < BEFORE_SWAP; i++) await db.appendMessage("s", { role: "user", content: `before swap ${i}` });

  renameSync(backup, dbPath);
  const acknowledged: string[] = [];
  const failures: string[] = [];
  for (let i = 0; i < AFTER_SWAP; i++) {
    const content = `after swap ${i}`;
    try {
      await db.appendMessage("s", { role: "user", content });
      acknowledged.push(content);
    } catch (err) {
      failures.push(err instanceof SessionDBError ? err.code : String(err));
    }
  }

  assert.deepEqual([...new Set(failures)].filter((code) => code !== "UNAVAILABLE"), [], "only UNAVAILABLE (not applied to the file at the path)");
  assert.ok(acknowledged.length >= AFTER_SWAP - 2, `most writes after the swap were acknowledged: ${acknowledged.length}`);
  const inNewFile = new Set(rawAll<{ content: string }>(dbPath, "SELECT content FROM messages WHERE session_id = 's'").map((r) => r.content));
  const lost = acknowledged.filter((content) => !inNewFile.has(content));
  assert.deepEqual(lost, [], "writes acknowledged after the swap are missing from the file at the path");
  assert.ok(inNewFile.has("in both files"));
  assert.equal(db.mode, "direct");
  let limit: NodeJS.Timeout | undefined;
  const exited = await Promise.race([
    daemon.child.done,
    new Promise<never>((_, reject) => {
      limit = setTimeout(() => reject(new Error(`the daemon still served the replaced file ${EXIT_LIMIT_MS} ms after the swap`)), EXIT_LIMIT_MS);
    }),
  ]).finally(() => clearTimeout(limit));
  assert.match(exited.stderr, /state\.db was replaced: it no longer names the file this daemon serves; stopping/);
  assert.notEqual(exited.code, 0, "a daemon that lost its file exits non-zero, so a supervisor restarts it");
  const file = checkFile(dbPath);
  assert.equal(file.integrity, "ok");
  assert.equal(file.ftsIntegrity, "ok");
  assert.deepEqual(file.counterMismatches, []);
  t.diagnostic(`after the swap: ${acknowledged.length} acknowledged (all in the new file), ${failures.length} failed with UNAVAILABLE`);
});

/**
 * SIGTERM while the reader threads run long searches, and after heavy reads (SPEC §5): the daemon
 * exits 0, not by a signal. Each reader thread holds a better-sqlite3 connection; a thread ended
 * mid-query, or one whose objects outlive the native addon, can crash Node on its way out after
 * the daemon logged a clean stop. Every search is answered: its hits, or an error with a code.
 */
import assert from "node:assert/strict";
import { readdirSync, readlinkSync } from "node:fs";
import { test } from "node:test";
import { Daemon } from "../../src/daemon/daemon.js";
import { openSessionDB, SessionDBError } from "../../src/index.js";
import { daemonStats, freshDbPath } from "../helpers/daemon.js";
import { buildSlowSearchFile, SLOW_QUERY } from "../helpers/slow-search.js";
import { waitUntil } from "../helpers/wait-until.js";
import { scaled, serve } from "./harness.js";

const ROUNDS = scaled(4, 6);
const READERS = 2;
const CLIENTS = 3;
const SEARCHES_PER_CLIENT = 3;

test(`SIGTERM with searches running and queued, and once they are done (${ROUNDS} rounds): exit 0, every search answered`, async (t) => {
  const dbPath = freshDbPath(t);
  buildSlowSearchFile(dbPath);
  const outcomes = new Map<string, number>();
  for (let round = 0; round < ROUNDS; round++) {
    const midSearch = round % 2 === 0;
    const daemon = await serve(t, dbPath, { readers: READERS });
    const clients = await Promise.all(Array.from({ length: CLIENTS }, () => daemon.open(t, { requestTimeoutMs: 300_000 })));
    const watcher = await daemon.open(t);
    const searches = Promise.all(clients.flatMap((db) =>
      Array.from({ length: SEARCHES_PER_CLIENT }, () =>
        db.searchMessages(SLOW_QUERY, { limit: 20 }).then(
          (hits) => (hits.length === 20 ? "answered" : `answered with ${hits.length} hits`),
          (err: unknown) => (err instanceof SessionDBError ? err.code : `not a SessionDBError: ${String(err)}`),
        ),
      ),
    ));
    if (midSearch) await waitUntil("the searches holding every reader thread", async () => (await daemonStats(watcher)).readers.inFlight >= READERS);
    else assert.deepEqual(new Set(await searches), new Set(["answered"]));
    const finished = await daemon.stop();
    const when = midSearch ? "mid-search" : "after the searches";
    assert.deepEqual({ code: finished.code, signal: finished.signal }, { code: 0, signal: null }, `round ${round}, ${when}: ${finished.stderr}`);
    for (const outcome of await searches) outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
  }
  for (const outcome of outcomes.keys()) assert.match(outcome, /^(answered|[A-Z_]+)$/, "a search got no answer and no error code");
  t.diagnostic(`SIGTERM x${ROUNDS}, mid-search and after heavy reads: exit 0 each time; searches: ${JSON.stringify(Object.fromEntries(outcomes))}`);
});

/** The files this process has open whose path starts with `prefix`. */
function openFilesUnder(prefix: string): string[] {
  const open: string[] = [];
  for (const fd of readdirSync("/proc/self/fd")) {
    try {
      const target = readlinkSync(`/proc/self/fd/${fd}`);
      if (target.startsWith(prefix)) open.push(target);
    } catch {
      // closed meanwhile
    }
  }
  return open;
}

test("a search stopped mid-query (its deadline) still has its thread's connection closed before the daemon's close() resolves", async (t) => {
  const dbPath = freshDbPath(t);
  buildSlowSearchFile(dbPath);
  const daemon = await Daemon.start({ path: dbPath, readers: READERS, log: () => undefined });
  t.after(() => daemon.close());
  const hurried = await openSessionDB({ path: dbPath, mode: "daemon", socketPath: daemon.socketPath, requestTimeoutMs: 300 });
  t.after(() => hurried.close());
  const late = await hurried.searchMessages(SLOW_QUERY, { limit: 20 }).then(() => null, (err: unknown) => err);
  assert.ok(late instanceof SessionDBError && late.code === "TIMEOUT", `a 300 ms deadline on a slow search did not fail with TIMEOUT: ${String(late)}`);
  await hurried.close();
  // The stopped search's thread is still in its query; close() waits for it, as for every thread.
  await daemon.close();
  // The daemon's guard keeps one descriptor of the database itself for the process's life (closing
  // it would drop every POSIX lock this process holds on the file, see src/file-guard.ts); an
  // SQLite connection left open would also hold the -wal and -shm, or a second descriptor.
  const open = openFilesUnder(dbPath);
  assert.deepEqual(open.filter((path) => path !== dbPath), [], "a reader thread still had the file's WAL or shared memory open after the daemon stopped");
  assert.ok(open.length <= 1, `a reader thread still had the file open after the daemon stopped: ${open.join(", ")}`);
});

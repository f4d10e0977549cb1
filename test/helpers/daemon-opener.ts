/**
 * The contract suite's opener through a daemon: every test's database gets its own real `serve`
 * process, started when the suite opens the database and stopped (SIGTERM) when the suite closes
 * the handle; every one must exit 0 (checked in the test file's `after`).
 */
import { after } from "node:test";
import { defaultSocketPath, openSessionDB, type SessionDB } from "../../src/index.js";
import { killAndWait, spawnServe, waitUntilServing } from "./daemon.js";
import type { Child } from "./processes.js";

/** Stops the daemon by SIGTERM and fails unless it exits 0 (it drained and checkpointed). */
async function stop(child: Child, running: Set<Child>): Promise<void> {
  if (child.pid !== undefined) process.kill(child.pid, "SIGTERM");
  const finished = await child.done;
  running.delete(child);
  if (finished.code !== 0) throw new Error(`the daemon exited with ${finished.code ?? finished.signal}: ${finished.stderr}`);
}

/**
 * An opener for `runContractSuite`, over a daemon per database, the handle opened in `mode` (which
 * must find that daemon). The handle's close() also stops
 * the daemon once the client is closed; the stop is not awaited there (close() resolves as the
 * client's does): the file's `after` checks every exit.
 */
export function daemonOpener(mode: "daemon" | "auto" = "daemon"): (location: string) => Promise<SessionDB> {
  const running = new Set<Child>();
  const stops: Array<Promise<void>> = [];

  after(async () => {
    const outcomes = await Promise.allSettled(stops);
    await Promise.all([...running].map(killAndWait));
    const failed = outcomes.filter((o) => o.status === "rejected");
    if (failed.length > 0) throw new Error(`${failed.length} daemons did not stop cleanly: ${String(failed[0]!.reason)}`);
  });

  const stoppingOnClose = (db: SessionDB, child: Child): SessionDB => {
    let closing: Promise<void> | null = null;
    const close = () =>
      (closing ??= db.close().then(() => {
        stops.push(stop(child, running));
      }));
    return new Proxy(db, {
      get(target, key) {
        if (key === "close") return close;
        const value: unknown = Reflect.get(target, key, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
  };

  return async (location) => {
    const child = spawnServe(location, { readers: 1 });
    running.add(child);
    try {
      await waitUntilServing(child, defaultSocketPath(location));
      const db = await openSessionDB({ path: location, mode });
      if (db.mode !== "daemon") throw new Error(`opened in ${db.mode} mode`);
      // Once a read was answered the reader has its connection open, so the daemon no longer
      // needs the directory the fixture removes right after close().
      await db.sessionCount();
      return stoppingOnClose(db, child);
    } catch (err) {
      await killAndWait(child);
      running.delete(child);
      throw err;
    }
  };
}

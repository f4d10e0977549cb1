/** A reader looping one search, in direct mode or through the daemon (the WAL growth check). */
import { openSessionDB } from "../../src/index.js";
import { ChildControl, runChild } from "./child-control.js";
import type { SearchLoopConfig, SearchLoopReport } from "./protocol.js";

runChild(async () => {
  const control = new ChildControl<SearchLoopConfig>();
  const c = control.config;
  const db = await openSessionDB(c.socket === null ? { path: c.db, mode: "direct" } : { path: c.db, mode: "daemon", socketPath: c.socket });
  await control.ready();
  const startMs = Date.now();
  const deadline = performance.now() + c.seconds * 1000;
  const latenciesMs: number[] = [];
  while (!control.stopped && performance.now() < deadline) {
    const t0 = performance.now();
    await db.searchMessages(c.query);
    latenciesMs.push(performance.now() - t0);
    // Direct mode searches synchronously: let the `stop` line in between loops.
    await new Promise((resolve) => setImmediate(resolve));
  }
  await db.close();
  const report: SearchLoopReport = { loops: latenciesMs.length, startMs, endMs: Date.now(), latenciesMs };
  control.report(report);
});

/**
 * A child of the watch bench (bench/watch-fanout.ts): `writers` appends from K daemon clients,
 * each to its own session, recording when each append was acknowledged (its commit, as the
 * writer knows it); `watchers` follows every session from K daemon clients, recording when each
 * sampled message arrived. Times are the host's clock in milliseconds (`performance.timeOrigin +
 * performance.now()`), so the parent can match them across the two processes.
 */
import { openSessionDB, type SessionDB } from "../../src/index.js";
import { ChildControl, runChild } from "./child-control.js";

export interface WatchFanoutConfig {
  role: "writers" | "watchers";
  db: string;
  socket: string;
  clients: number;
  seconds: number;
  /** Messages whose id is a multiple of this are timed (the rest are only counted). */
  sampleEvery: number;
}

export interface WatchFanoutReport {
  /** writers: acknowledged appends; watchers: messages received (all watchers together). */
  count: number;
  /** [message id, time] pairs: acknowledgements (writers) or arrivals, watcher after watcher. */
  times: Array<[number, number]>;
  /** writers: [message id, time the append was sent] for the same messages. */
  sent: Array<[number, number]>;
  /** watchers: resync events received. */
  resyncs: number;
  seconds: number;
}

const clock = () => performance.timeOrigin + performance.now();
const CONTENT = "a message of an ordinary size, ".repeat(8);

runChild(async () => {
  const control = new ChildControl<WatchFanoutConfig>();
  const { role, db: path, socket, clients, seconds, sampleEvery } = control.config;
  const handles: SessionDB[] = [];
  for (let i = 0; i < clients; i++) handles.push(await openSessionDB({ path, mode: "daemon", socketPath: socket }));
  const times: Array<[number, number]> = [];
  const sent: Array<[number, number]> = [];
  let count = 0;
  let resyncs = 0;
  if (role === "writers") {
    for (const [i, db] of handles.entries()) await db.createSession(`w${i}`, "bench");
    await control.ready();
    const started = clock();
    const until = started + seconds * 1000;
    await Promise.all(handles.map(async (db, i) => {
      while (clock() < until && !control.stopped) {
        const at = clock();
        const id = await db.appendMessage(`w${i}`, { role: "user", content: CONTENT });
        if (id % sampleEvery === 0) {
          times.push([id, clock()]);
          sent.push([id, at]);
        }
        count++;
      }
    }));
    control.report({ count, times, sent, resyncs, seconds: (clock() - started) / 1000 } satisfies WatchFanoutReport);
  } else {
    const stop = new AbortController();
    const subscribed = handles.map(async (db) => {
      for await (const event of db.watch({ signal: stop.signal })) {
        if (event.type === "resync") resyncs++;
        if (event.type !== "message") continue;
        count++;
        if (event.message.id % sampleEvery === 0) times.push([event.message.id, clock()]);
      }
    });
    await control.ready();
    const started = clock();
    // The parent stops the watchers once the writers are done and their last events have come.
    while (!control.stopped) await new Promise((resolve) => setTimeout(resolve, 20));
    stop.abort();
    await Promise.all(subscribed);
    control.report({ count, times, sent: [], resyncs, seconds: (clock() - started) / 1000 } satisfies WatchFanoutReport);
  }
  await Promise.all(handles.map((db) => db.close()));
});

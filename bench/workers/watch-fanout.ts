/**
 * A child of the watch bench (bench/watch-fanout.ts): `writers` appends from K daemon clients,
 * each to its own session, recording when each append was acknowledged (its commit, as the
 * writer knows it); `watchers` follows every session from K daemon clients, recording when each
 * sampled message arrived, and how long after the message's own timestamp (taken by the daemon's
 * writer thread as it ran the append, inside the transaction just before its COMMIT: the closest
 * mark of the commit the event carries). Times are the host's clock in milliseconds
 * (`performance.timeOrigin + performance.now()`, the clock the daemon stamps messages with), so
 * the parent can match them across the processes. Each reports its own CPU time over the run: on
 * a 2-core machine the 32 clients' CPU is taken from the daemon's.
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
  /** watchers: message events whose id was not above the last one that watcher received (a duplicate or out of commit order). */
  disorders: number;
  /** watchers: from each sampled message's timestamp (the writer thread's, just before COMMIT) to its arrival, ms. */
  fromStamp: number[];
  /** watchers: whether every event expected came before the drain's bound (false: the count stopped moving short of it). */
  drained: boolean;
  /** This process's CPU time (user + system) over the run, ms: writers, their append loop; watchers, until the writers were done. */
  cpuMs: number;
  seconds: number;
}

/** The watchers' drain: the count has not moved for this long, so what is missing is not coming. */
const STILL_MS = 2_000;
/** And in any case no longer than this. */
const DRAIN_LIMIT_MS = 60_000;

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
  let disorders = 0;
  const fromStamp: number[] = [];
  const cpuMs = (since: NodeJS.CpuUsage) => {
    const { user, system } = process.cpuUsage(since);
    return (user + system) / 1000;
  };
  if (role === "writers") {
    for (const [i, db] of handles.entries()) await db.createSession(`w${i}`, "bench");
    await control.ready();
    const started = clock();
    const cpu = process.cpuUsage();
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
    const ran = cpuMs(cpu);
    control.report({ count, times, sent, resyncs, disorders, fromStamp, drained: true, cpuMs: ran, seconds: (clock() - started) / 1000 } satisfies WatchFanoutReport);
  } else {
    const stop = new AbortController();
    const subscribed = handles.map(async (db) => {
      let last = 0;
      // From the first message: a watch the daemon registers after the writers began still gets
      // every message (replayed from the table), so the count owed is exact.
      for await (const event of db.watch({ afterMessageId: 0, signal: stop.signal })) {
        if (event.type === "resync") resyncs++;
        if (event.type !== "message") continue;
        count++;
        const { id, timestamp } = event.message;
        if (id <= last) disorders++;
        last = id;
        if (id % sampleEvery === 0) {
          const at = clock();
          times.push([id, at]);
          fromStamp.push(at - timestamp * 1000);
        }
      }
    });
    await control.ready();
    const started = clock();
    const cpu = process.cpuUsage();
    // The parent stops the watchers once the writers are done, saying how many events all the
    // watchers together are owed: wait for them while the count still moves, within a bound.
    while (!control.stopped) await new Promise((resolve) => setTimeout(resolve, 20));
    const ran = cpuMs(cpu);
    const expected = Number(control.stopArgument ?? count);
    const limit = Date.now() + DRAIN_LIMIT_MS;
    let moved = Date.now();
    for (let seen = count; count < expected && Date.now() < limit && Date.now() - moved < STILL_MS; ) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      if (count !== seen) [seen, moved] = [count, Date.now()];
    }
    const drained = count >= expected;
    stop.abort();
    await Promise.all(subscribed);
    control.report({ count, times, sent: [], resyncs, disorders, fromStamp, drained, cpuMs: ran, seconds: (clock() - started) / 1000 } satisfies WatchFanoutReport);
  }
  await Promise.all(handles.map((db) => db.close()));
});

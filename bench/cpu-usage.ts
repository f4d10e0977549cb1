/**
 * CPU figures for a run, the evidence for "is this machine simply saturated?": the share of all
 * cores that were busy, the share the host took (steal, on a virtual machine), the CPU time of
 * one process (the daemon) read from /proc, and how long a process's threads were ready to run but
 * waited for a core (Linux's schedstat).
 */
import { readdirSync, readFileSync } from "node:fs";
import { cpus } from "node:os";

/** Linux's clock tick, which /proc/stat and /proc/<pid>/stat count in (100 on every common configuration). */
const CLOCK_TICKS_PER_S = 100;

export interface MachineTimes {
  busyMs: number;
  totalMs: number;
  /** Time the hypervisor gave this machine's cores to other guests ("steal"); null where the
   *  kernel does not tell (off Linux). */
  stolenMs: number | null;
}

/**
 * The machine's cores added up since boot. Busy and idle as libuv counts them (`os.cpus()`):
 * user + nice + system + irq, and idle; on Linux also steal, read from /proc/stat's first line.
 * On a virtual machine a core the host took away makes every wake-up and hop dearer, and shows
 * nowhere else.
 */
export function machineTimes(): MachineTimes {
  let busyMs = 0;
  let totalMs = 0;
  for (const { times } of cpus()) {
    const busy = times.user + times.nice + times.sys + times.irq;
    busyMs += busy;
    totalMs += busy + times.idle;
  }
  return { busyMs, totalMs, stolenMs: stolenMs() };
}

function stolenMs(): number | null {
  try {
    // "cpu  user nice system idle iowait irq softirq steal guest guest_nice", in clock ticks.
    const steal = Number(readFileSync("/proc/stat", "utf8").split("\n", 1)[0]!.trim().split(/\s+/)[8]);
    return Number.isFinite(steal) ? (steal * 1000) / CLOCK_TICKS_PER_S : null;
  } catch {
    return null;
  }
}

/** The share (0–1) of all cores that were busy between the two readings. */
export function busyShare(before: MachineTimes, after: MachineTimes): number | null {
  const total = after.totalMs - before.totalMs;
  return total > 0 ? (after.busyMs - before.busyMs) / total : null;
}

/** The share (0–1) of the cores' time the host took between the two readings (busy, idle and stolen). */
export function stolenShare(before: MachineTimes, after: MachineTimes): number | null {
  if (before.stolenMs === null || after.stolenMs === null) return null;
  const stolen = after.stolenMs - before.stolenMs;
  const total = after.totalMs - before.totalMs + stolen;
  return total > 0 ? stolen / total : null;
}

/** User + system CPU time of a process and all its threads, in ms; null off Linux. */
export function processCpuMs(pid: number | undefined): number | null {
  if (pid === undefined) return null;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after the command name (which may hold spaces) start at field 3.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const utime = Number(fields[11]);
    const stime = Number(fields[12]);
    return Number.isFinite(utime + stime) ? ((utime + stime) * 1000) / CLOCK_TICKS_PER_S : null;
  } catch {
    return null;
  }
}

/** Time a process's threads ran, and time they were ready to run but waited for a core, in ms. */
export interface SchedTimes {
  runMs: number;
  waitMs: number;
}

/**
 * Sums /proc/<pid>/task/<tid>/schedstat over the threads alive now ("self" for this process);
 * null off Linux or without schedstat. A thread that ends between two readings drops out, so
 * compare readings of threads that live through the run.
 */
export function schedTimes(pid: number | "self" | undefined): SchedTimes | null {
  if (pid === undefined) return null;
  try {
    let runNs = 0;
    let waitNs = 0;
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      try {
        const [run, wait] = readFileSync(`/proc/${pid}/task/${tid}/schedstat`, "utf8").split(" ").map(Number);
        runNs += run!;
        waitNs += wait!;
      } catch {
        // the thread ended while being read
      }
    }
    return Number.isFinite(runNs + waitNs) ? { runMs: runNs / 1e6, waitMs: waitNs / 1e6 } : null;
  } catch {
    return null;
  }
}

/** What happened between two readings. */
export function schedDelta(before: SchedTimes | null, after: SchedTimes | null): SchedTimes | null {
  return before === null || after === null ? null : { runMs: after.runMs - before.runMs, waitMs: after.waitMs - before.waitMs };
}

/** The share (0–1) of the time ready to run that was spent waiting for a core. */
export function waitShare(times: readonly SchedTimes[]): number | null {
  const run = times.reduce((sum, t) => sum + t.runMs, 0);
  const wait = times.reduce((sum, t) => sum + t.waitMs, 0);
  return run + wait > 0 ? wait / (run + wait) : null;
}

/** The daemon's threads by what they do: the event loop, the writer, the readers, and the rest (V8's and libuv's helpers: GC, compilation, file system). */
export type ThreadRole = "main" | "writer" | "readers" | "other";
export const THREAD_ROLES: readonly ThreadRole[] = ["main", "writer", "readers", "other"];

/** Run time (ms) of each thread alive now, by thread id, with its role; null off Linux. */
export type ThreadTimes = Map<string, { role: ThreadRole; runMs: number }>;

/** The daemon's workers name their threads (workers/thread-name.ts); the main thread's id is the process's. */
function roleOf(pid: number, tid: string, comm: string): ThreadRole {
  if (tid === String(pid)) return "main";
  if (comm === "sdb-writer") return "writer";
  if (comm === "sdb-reader" || comm === "sdb-exporter") return "readers";
  return "other";
}

export function threadTimes(pid: number | undefined): ThreadTimes | null {
  if (pid === undefined) return null;
  try {
    const times: ThreadTimes = new Map();
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      try {
        const comm = readFileSync(`/proc/${pid}/task/${tid}/comm`, "utf8").trim();
        const runNs = Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, "utf8").split(" ")[0]);
        if (Number.isFinite(runNs)) times.set(tid, { role: roleOf(pid, tid, comm), runMs: runNs / 1e6 });
      } catch {
        // the thread ended while being read
      }
    }
    return times;
  } catch {
    return null;
  }
}

/** CPU ms per role between two readings (a thread that started meanwhile counts from 0; one that ended drops out). */
export function threadDelta(before: ThreadTimes | null, after: ThreadTimes | null): Record<ThreadRole, number> | null {
  if (before === null || after === null) return null;
  const delta: Record<ThreadRole, number> = { main: 0, writer: 0, readers: 0, other: 0 };
  for (const [tid, t] of after) delta[t.role] += t.runMs - (before.get(tid)?.runMs ?? 0);
  return delta;
}

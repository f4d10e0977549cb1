/**
 * CPU figures for a run, the evidence for "is this machine simply saturated?": the share of all
 * cores that were busy, and the CPU time of one process (the daemon) read from /proc.
 */
import { readFileSync } from "node:fs";
import { cpus } from "node:os";

export interface MachineTimes {
  busyMs: number;
  totalMs: number;
}

export function machineTimes(): MachineTimes {
  let busyMs = 0;
  let totalMs = 0;
  for (const { times } of cpus()) {
    const busy = times.user + times.nice + times.sys + times.irq;
    busyMs += busy;
    totalMs += busy + times.idle;
  }
  return { busyMs, totalMs };
}

/** The share (0–1) of all cores that were busy between the two readings. */
export function busyShare(before: MachineTimes, after: MachineTimes): number | null {
  const total = after.totalMs - before.totalMs;
  return total > 0 ? (after.busyMs - before.busyMs) / total : null;
}

/** Linux's clock tick, which /proc/<pid>/stat counts in (100 on every common configuration). */
const CLOCK_TICKS_PER_S = 100;

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

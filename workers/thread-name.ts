import { writeFileSync } from "node:fs";

/**
 * Names this thread as `top -H`, `ps -L` and /proc/<pid>/task/<tid>/comm show it (Linux; at most
 * 15 bytes), so the daemon's threads can be told apart: the bench counts each one's CPU by name.
 * Elsewhere, or where /proc is not writable, the thread keeps Node's name.
 */
export function nameThread(name: string): void {
  try {
    writeFileSync("/proc/thread-self/comm", name.slice(0, 15));
  } catch {
    // not Linux, or no /proc: only a label
  }
}

import type { DaemonStats } from "../protocol/control.js";

/** How often an idle daemon checks its clients, at most (shorter for short idle limits). */
const MAX_CHECK_INTERVAL_MS = 1000;

/** What the idle check needs of the daemon. */
export interface IdleWatched {
  stats(): Pick<DaemonStats, "clients">;
  close(): Promise<void>;
  readonly closed: Promise<void>;
}

/**
 * The daemon option `idleExitMs` (`serve --idle-exit`): ends the daemon cleanly once no client has
 * been connected for `idleMs` (daemons that clients start on demand must not outlive their use
 * forever). Checked on a timer that does not keep the process alive; stops when the daemon closes
 * for any other reason.
 */
export function closeWhenIdle(daemon: IdleWatched, idleMs: number, log: (line: string) => void): void {
  let idleSince = Date.now();
  const timer = setInterval(() => {
    const now = Date.now();
    if (daemon.stats().clients > 0) {
      idleSince = now;
    } else if (now - idleSince >= idleMs) {
      clearInterval(timer);
      log(`no client for ${idleMs / 1000} s (--idle-exit): stopping`);
      void daemon.close();
    }
  }, Math.max(10, Math.min(MAX_CHECK_INTERVAL_MS, idleMs / 4)));
  timer.unref();
  void daemon.closed.then(() => clearInterval(timer));
}

import { Daemon, type DaemonOptions } from "../daemon/daemon.js";

/**
 * `sessiondb serve`: runs the daemon in the foreground until SIGTERM/SIGINT, a `shutdown`
 * request or, with `idleExitMs`, that long without a client; then drains queued writes,
 * checkpoints and exits 0. Exits 1 when the database file was replaced under it, or its `-wal` or
 * `-shm` removed or truncated (so a supervisor restarts it on whole files).
 */
export async function serve(options: DaemonOptions): Promise<void> {
  const daemon = await Daemon.start(options);
  const stop = (signal: string) => {
    daemon.options.log(`${signal} received`);
    void daemon.close();
  };
  process.once("SIGTERM", () => stop("SIGTERM"));
  process.once("SIGINT", () => stop("SIGINT"));
  await daemon.closed;
  if (daemon.fileReplaced) process.exitCode = 1;
}

import type { ChildProcess } from "node:child_process";

/**
 * What an interrupted bench (Ctrl-C, SIGTERM) still undoes before it exits: the PostgreSQL
 * server it started (pg_ctl puts the server in a session of its own, out of reach of the
 * terminal's Ctrl-C), the processes it started (a SIGTERM reaches the bench alone), and its work
 * directory (a full run's copy of the 1,000,000-message corpus is about 1 GB). Without this an
 * interrupted run left all three behind. Every undo is synchronous: the process exits right after.
 */
const undos = new Set<() => void>();

/** Registers `undo` until the returned function is called (the thing was undone the normal way). */
export function undoOnInterrupt(undo: () => void): () => void {
  undos.add(undo);
  return () => undos.delete(undo);
}

/** On SIGINT or SIGTERM: runs the registered undos, newest first, and exits 130 or 143. */
export function exitCleanlyOnInterrupt(log: (line: string) => void): void {
  for (const [signal, code] of [["SIGINT", 130], ["SIGTERM", 143]] as const) {
    process.once(signal, () => {
      log(`${signal}: stopping the bench's processes and its PostgreSQL server, removing its files`);
      for (const undo of [...undos].reverse()) {
        try {
          undo();
        } catch (err) {
          log(`  could not: ${(err as Error).message}`);
        }
      }
      process.exit(code);
    });
  }
}

/** A process the bench started: killed on an interrupt, unless it has ended by then. */
export function killOnInterrupt(child: ChildProcess): void {
  const forget = undoOnInterrupt(() => child.kill("SIGKILL"));
  child.once("exit", forget).once("error", forget);
}

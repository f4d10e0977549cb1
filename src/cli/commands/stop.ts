import { existsSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import type { Command } from "commander";
import { SessionDBError } from "../../errors.js";
import { connectDaemon, filesOf, globalsOf } from "../open-store.js";
import { Output } from "../output.js";

/** How long `stop` waits for the daemon to finish its queue and remove its socket. */
const STOP_WAIT_MS = 60_000;

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

export function registerStop(program: Command): void {
  program
    .command("stop")
    .description("stop the daemon serving the database, after it has finished every queued write")
    .action(async (_opts: unknown, command: Command) => {
      const globals = globalsOf(command);
      const out = new Output(globals.json === true);
      const client = await connectDaemon(globals);
      if (client === null) throw new SessionDBError("UNAVAILABLE", `no daemon serves ${filesOf(globals).db}`);
      const { path } = client;
      const pid = client.daemon.server.pid;
      let socket: string;
      try {
        socket = (await client.daemon.stats()).socket;
        await client.daemon.shutdown();
      } finally {
        await client.db.close();
      }
      // The daemon removes its socket last, once every queued write is answered and checkpointed;
      // a socket systemd passed it stays (the unit's), so then its exit is what is waited for.
      const deadline = Date.now() + STOP_WAIT_MS;
      while (existsSync(socket) && alive(pid)) {
        if (Date.now() > deadline) {
          throw new SessionDBError("TIMEOUT", `the daemon (pid ${pid}) is still stopping after ${STOP_WAIT_MS / 1000} s`);
        }
        await sleep(25);
      }
      out.result({ stopped: true, pid }, () => out.line(`stopped the daemon (pid ${pid}) serving ${path}`));
    });
}

import { existsSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import type { Command } from "commander";
import { databaseIdentity } from "../../socket-path.js";
import { SessionDBError } from "../../errors.js";
import { connectDaemon, databasePath, globalsOf } from "../open-store.js";
import { Output } from "../output.js";

/** How long `stop` waits for the daemon to finish its queue and remove its socket. */
const STOP_WAIT_MS = 60_000;

export function registerStop(program: Command): void {
  program
    .command("stop")
    .description("stop the daemon serving the database, after it has finished every queued write")
    .action(async (_opts: unknown, command: Command) => {
      const globals = globalsOf(command);
      const out = new Output(globals.json === true);
      const path = databasePath(globals);
      const client = await connectDaemon(path);
      if (client === null) throw new SessionDBError("UNAVAILABLE", `no daemon serves ${databaseIdentity(path)}`);
      const pid = client.server.pid;
      let socket: string;
      try {
        socket = (await client.stats()).socket;
        await client.shutdown();
      } finally {
        await client.close();
      }
      // The daemon removes its socket last, once every queued write is answered and checkpointed.
      const deadline = Date.now() + STOP_WAIT_MS;
      while (existsSync(socket)) {
        if (Date.now() > deadline) {
          throw new SessionDBError("TIMEOUT", `the daemon (pid ${pid}) is still stopping after ${STOP_WAIT_MS / 1000} s`);
        }
        await sleep(25);
      }
      out.result({ stopped: true, pid }, () => out.line(`stopped the daemon (pid ${pid}) serving ${databaseIdentity(path)}`));
    });
}

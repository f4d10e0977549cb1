import { Option, type Command } from "commander";
import { positiveInt } from "../arguments.js";
import { globalsOf } from "../open-store.js";
import { serve } from "../serve.js";

export function registerServe(program: Command): void {
  program
    .command("serve")
    .description("run the daemon for the database in the foreground (logs to stderr; exits 1 if the file is replaced under it)")
    .option("--socket <path>", "the Unix socket (default: derived from the database path); only a stale socket of ours there is replaced, anything else makes serve refuse")
    .option("--readers <n>", "reader threads (default: the number of cores, 2 to 8)", positiveInt)
    .addOption(new Option("--synchronous <mode>", "FULL survives power loss; NORMAL commits faster").choices(["FULL", "NORMAL"]).default("FULL"))
    .option("--wal-limit-mb <n>", "WAL size that triggers a TRUNCATE checkpoint", positiveInt, 64)
    .action(async (opts: { socket?: string; readers?: number; synchronous: "FULL" | "NORMAL"; walLimitMb: number }, command: Command) => {
      const { db } = globalsOf(command);
      await serve({
        ...(db !== undefined ? { path: db } : {}),
        ...(opts.socket !== undefined ? { socketPath: opts.socket } : {}),
        ...(opts.readers !== undefined ? { readers: opts.readers } : {}),
        synchronous: opts.synchronous,
        walLimitBytes: opts.walLimitMb * 1024 * 1024,
        faultInjection: process.env.SESSIONDB_FAULT_INJECTION === "1",
      });
    });
}

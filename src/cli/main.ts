#!/usr/bin/env node
import { Command, InvalidArgumentError, Option } from "commander";
import { SessionDBError } from "../errors.js";
import { VERSION } from "../version.js";
import { serve } from "./serve.js";

function positiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n <= 0) throw new InvalidArgumentError("expected a positive integer");
  return n;
}

const program = new Command()
  .name("sessiondb")
  .description("The session and message store of an AI agent: one SQLite file, served by a group-commit daemon.")
  .version(VERSION)
  .option("--db <path>", "the database file (default: $SESSIONDB_PATH, $HERMES_HOME/state.db, ~/.hermes/state.db)");

program
  .command("serve")
  .description("run the daemon for the database in the foreground (logs to stderr)")
  .option("--socket <path>", "the Unix socket (default: derived from the database path)")
  .option("--readers <n>", "reader threads", positiveInt)
  .addOption(new Option("--synchronous <mode>", "FULL survives power loss; NORMAL commits faster").choices(["FULL", "NORMAL"]).default("FULL"))
  .option("--wal-limit-mb <n>", "WAL size that triggers a TRUNCATE checkpoint", positiveInt, 64)
  .action(async (opts: { socket?: string; readers?: number; synchronous: "FULL" | "NORMAL"; walLimitMb: number }) => {
    const { db } = program.opts<{ db?: string }>();
    await serve({
      ...(db !== undefined ? { path: db } : {}),
      ...(opts.socket !== undefined ? { socketPath: opts.socket } : {}),
      ...(opts.readers !== undefined ? { readers: opts.readers } : {}),
      synchronous: opts.synchronous,
      walLimitBytes: opts.walLimitMb * 1024 * 1024,
      faultInjection: process.env.SESSIONDB_FAULT_INJECTION === "1",
    });
  });

try {
  await program.parseAsync();
} catch (err) {
  const code = err instanceof SessionDBError ? err.code : "INTERNAL";
  process.stderr.write(`error ${code}: ${(err as Error).message}\n`);
  process.exitCode = 1;
}

#!/usr/bin/env node
/**
 * `sessiondb`: look at and manage an agent's sessions, through the daemon when one serves the
 * file, else directly on it. Exit codes: 0 done, 1 the operation failed (`error CODE: message`
 * on stderr), 2 bad usage.
 */
import { Command } from "commander";
import { VERSION } from "../version.js";
import { reportError } from "./cli-error.js";
import { hideSecretsFromPs } from "./process-title.js";
import { registerBackup } from "./commands/backup.js";
import { registerCheck } from "./commands/check.js";
import { registerDelete } from "./commands/delete.js";
import { registerCopy } from "./commands/copy.js";
import { registerExport } from "./commands/export.js";
import { registerImport } from "./commands/import.js";
import { registerList } from "./commands/list.js";
import { registerOptimize } from "./commands/optimize.js";
import { registerPrune } from "./commands/prune.js";
import { registerSearch } from "./commands/search.js";
import { registerServe } from "./commands/serve.js";
import { registerService } from "./commands/service.js";
import { registerShow } from "./commands/show.js";
import { registerSpool } from "./commands/spool.js";
import { registerStats } from "./commands/stats.js";
import { registerStatus } from "./commands/status.js";
import { registerStop } from "./commands/stop.js";
import { registerTail } from "./commands/tail.js";
import { registerTitle } from "./commands/title.js";
import { registerVerify } from "./commands/verify.js";
import { registerWatch } from "./commands/watch.js";

// First: a password in `--db postgres://user:secret@…` must not stay readable in `ps`.
hideSecretsFromPs();

const program = new Command()
  .name("sessiondb")
  .description("The session and message store of an AI agent: one SQLite file, served by a group-commit daemon.")
  .version(VERSION)
  .option("--db <path>", "the database file (a leading ~ is refused, never expanded) or a postgres:// URL (default: $SESSIONDB_PATH, $HERMES_HOME/state.db, ~/.hermes/state.db)")
  .option("--direct", "open the file in this process even when a daemon serves it")
  .option("--json", "machine-readable output on stdout")
  .configureHelp({ showGlobalOptions: true })
  // Commander's usage errors throw instead of exiting, so they get exit code 2 below. Set before
  // the subcommands are made: they inherit it.
  .exitOverride();

for (const register of [
  registerServe, registerStatus, registerStop, registerList, registerShow, registerTail, registerWatch, registerSearch, registerExport,
  registerImport, registerCopy, registerTitle, registerDelete, registerPrune, registerStats, registerService,
  registerBackup, registerVerify, registerCheck, registerOptimize, registerSpool,
]) {
  register(program);
}

// A reader that goes away (`sessiondb export | head`) ends the output, not in a stack trace.
process.stdout.on("error", (err: NodeJS.ErrnoException) => {
  if (err.code === "EPIPE") process.exit(0);
  throw err;
});

try {
  await program.parseAsync();
} catch (err) {
  process.exitCode = reportError(err, (line) => process.stderr.write(line));
}

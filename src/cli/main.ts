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
import { commandRegistrations } from "./command-registrations.js";

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

for (const register of await commandRegistrations(process.argv.slice(2))) register(program);

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

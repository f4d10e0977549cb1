/** Asking before deleting: on a terminal unless `--yes`; never without `--yes` when no one can answer. */
import { createInterface } from "node:readline/promises";
import { CliError, UsageError } from "./cli-error.js";

/**
 * Resolves when the deletion may go ahead. Without `--yes`, stdin must be a terminal and the
 * answer `y`/`yes`; a script without `--yes` gets a usage error, a "no" the code CANCELLED.
 */
export async function confirm(command: string, question: string, yes: boolean): Promise<void> {
  if (yes) return;
  if (!process.stdin.isTTY) {
    throw new UsageError(`${command} needs --yes when stdin is not a terminal (nothing was deleted)`);
  }
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    const answer = await rl.question(`${question} [y/N] `);
    if (!/^y(es)?$/i.test(answer.trim())) throw new CliError("CANCELLED", "nothing was deleted");
  } finally {
    rl.close();
  }
}

/**
 * How the command fails: exit 1 when the operation failed (one stderr line `error CODE: message`),
 * exit 2 for bad usage (commander's own errors, and the ones below).
 */
import { CommanderError } from "commander";
import { SessionDBError } from "../errors.js";

/** Codes of the CLI's own failures, beside the library's (SPEC §8). */
export type CliErrorCode = "NOT_FOUND" | "AMBIGUOUS" | "CANCELLED";

/** The operation could not be done: exit 1. */
export class CliError extends Error {
  override readonly name = "CliError";
  readonly code: CliErrorCode;

  constructor(code: CliErrorCode, message: string) {
    super(message);
    this.code = code;
  }
}

/** The command line asked for something impossible: exit 2. */
export class UsageError extends Error {
  override readonly name = "UsageError";
}

export const EXIT_OK = 0;
export const EXIT_FAILED = 1;
export const EXIT_USAGE = 2;

/** Reports an error on stderr (commander has already reported its own) and gives the exit code. */
export function reportError(err: unknown, write: (line: string) => void): number {
  if (err instanceof CommanderError) return err.exitCode === 0 ? EXIT_OK : EXIT_USAGE;
  if (err instanceof UsageError) {
    write(`error: ${oneLine(err.message)}\n`);
    return EXIT_USAGE;
  }
  const code = err instanceof SessionDBError || err instanceof CliError ? err.code : "INTERNAL";
  const message = err instanceof Error ? err.message : String(err);
  write(`error ${code}: ${oneLine(message)}\n`);
  return EXIT_FAILED;
}

function oneLine(text: string): string {
  return text.replace(/\s*[\r\n]+\s*/g, " ").trim();
}

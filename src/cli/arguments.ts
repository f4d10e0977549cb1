/** Parsers for option values: a bad value is a usage error (exit 2), reported by commander. */
import { InvalidArgumentError } from "commander";
import { MAX_LIMIT } from "../operations/args.js";

export function positiveInt(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n) || n <= 0) throw new InvalidArgumentError("expected a positive integer");
  return n;
}

/** A positive number of seconds; fractions allowed. */
export function positiveSeconds(value: string): number {
  return positiveDecimal(value, "expected a positive number of seconds");
}

/** A positive number (hours…); fractions allowed. */
export function positiveNumber(value: string): number {
  return positiveDecimal(value, "expected a positive number");
}

function positiveDecimal(value: string, expected: string): number {
  const n = Number(value);
  if (!/^\d+(\.\d+)?$/.test(value) || !Number.isFinite(n) || n <= 0) throw new InvalidArgumentError(expected);
  return n;
}

export function limit(value: string): number {
  const n = positiveInt(value);
  if (n > MAX_LIMIT) throw new InvalidArgumentError(`at most ${MAX_LIMIT}`);
  return n;
}

export function nonNegativeInt(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n)) throw new InvalidArgumentError("expected a non-negative integer");
  return n;
}

export function nonNegativeNumber(value: string): number {
  const n = Number(value);
  if (value.trim() === "" || !Number.isFinite(n) || n < 0) throw new InvalidArgumentError("expected a non-negative number");
  return n;
}

/** For repeatable options: `--source a --source b` gives `["a", "b"]`. */
export function collect(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}

/**
 * Idempotency keys (issue 25), the parts every engine and mode shares: what a key may be, the
 * digest a key's write is remembered by, how its first result is kept, and the conflict error.
 * A write given a key is applied at most once: the key is recorded in the same transaction as
 * the write, and the same key again answers the first result without applying anything. The
 * engines keep the keys in a table of their own (`sessiondb_idempotency`; SQLite:
 * sqlite/keyed-write.ts, PostgreSQL: pg/pg-keyed-write.ts).
 */
import * as cryptoModule from "node:crypto";
import { createHash, randomUUID } from "node:crypto";
import { invalidArgument, SessionDBError } from "../errors.js";
import { arity } from "./args.js";
import { OPERATIONS, type WriteOpName } from "../operation-catalogue.js";

/** The table the keys live in, in the database they guard. */
export const KEYS_TABLE = "sessiondb_idempotency";

/** Longest key accepted, in UTF-16 code units. */
export const MAX_KEY_LENGTH = 256;

/** How long a key is remembered by default, at least. */
export const DEFAULT_KEY_RETENTION_HOURS = 24;

/** Most expired keys one pruning step deletes: pruning never holds the write lock long. */
export const KEY_PRUNE_BATCH = 500;

/** How often a writer prunes expired keys, at most. */
export const KEY_PRUNE_EVERY_MS = 60_000;

/** This process's part of its automatic keys: random, drawn once. */
let autoKeyPrefix: string | null = null;
let autoKeyCount = 0;

/**
 * The width of an automatic key's time: milliseconds since the epoch in base 36, zero-padded, so
 * keys sort by time as strings (nine digits last until the year 5188).
 */
const KEY_TIME_DIGITS = 9;

/**
 * The key a client gives a write whose caller gave none: kept across the client's own re-sends.
 * `auto-<time>-<uuid>-<n>`: the time the key was made (KEY_TIME_DIGITS), a random UUID drawn once per
 * process, then a counter, as unique as a UUID per write (another process, or this one after a
 * restart, draws another) without drawing one per write. The time comes first so that new keys,
 * from every client, sort after the kept ones: each commit adds its keys at the end of the keys
 * table's index, one page written, not a page per client's run of keys (docs/benchmarks.md).
 */
export function autoKey(): string {
  autoKeyPrefix ??= `-${randomUUID()}-`;
  return `auto-${Date.now().toString(36).padStart(KEY_TIME_DIGITS, "0")}${autoKeyPrefix}${(++autoKeyCount).toString(36)}`;
}

/** A key as a call or a request gives it: a string of 1–256 characters, or none (undefined, null). */
export function parseKey(value: unknown, op: string): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== "string") throw invalidArgument(`${op}: idempotencyKey must be a string, got ${typeof value}`);
  if (value.length === 0 || value.length > MAX_KEY_LENGTH) {
    throw invalidArgument(`${op}: idempotencyKey must be 1 to ${MAX_KEY_LENGTH} characters, got ${value.length}`);
  }
  return value;
}

/**
 * The hex SHA-256 of `[op, params]` as JSON, `params` being the write's arguments as the
 * engine-neutral parser gives them (so every mode and client encoding of one call agree).
 * Bytes (a reference-style `tokenCountBound`) count as their hex.
 */
export function writeDigest(op: string, params: unknown): string {
  // A replacer takes JSON.stringify off its fast path, and most writes hold no bytes: without
  // any, the text is the same without it.
  const text = holdsBytes(params)
    ? JSON.stringify([op, params], (_key, value: unknown) => (value instanceof Uint8Array ? { bytes: Buffer.from(value).toString("hex") } : value))
    : JSON.stringify([op, params]);
  return sha256Hex(text);
}

/** Whether `value` has a Uint8Array anywhere in it (arrays and objects, as JSON.stringify walks them). */
function holdsBytes(value: unknown): boolean {
  if (typeof value !== "object" || value === null) return false;
  if (value instanceof Uint8Array) return true;
  if (Array.isArray(value)) {
    for (const item of value) if (holdsBytes(item)) return true;
    return false;
  }
  for (const key in value) {
    if (Object.hasOwn(value, key) && holdsBytes((value as Record<string, unknown>)[key])) return true;
  }
  return false;
}

/** Node's one-shot hash (20.12 on) makes no Hash object per digest; older Nodes make one. */
const oneShotHash = (cryptoModule as { hash?: (algorithm: string, data: string, encoding: "hex") => string }).hash;

function sha256Hex(text: string): string {
  return oneShotHash !== undefined ? oneShotHash("sha256", text, "hex") : createHash("sha256").update(text).digest("hex");
}

/** A write's result as the table keeps it: a JSON array holding it, empty for a write that returns nothing. */
export function encodeResult(result: unknown): string {
  return JSON.stringify(result === undefined ? [] : [result]);
}

export function decodeResult(text: string): unknown {
  const kept = JSON.parse(text) as unknown[];
  return kept.length === 0 ? undefined : kept[0];
}

/** The first write under a key, as the table holds it. */
export interface KeptWrite {
  op: string;
  digest: string;
  result: string;
}

/** The first result again, or IDEMPOTENCY_CONFLICT when the key's write was another op or other arguments. */
export function answerAgain(kept: KeptWrite, key: string, op: string, digest: string): unknown {
  if (kept.op !== op || kept.digest !== digest) {
    const what = kept.op !== op ? `by ${kept.op}` : `by ${op} with other arguments`;
    throw new SessionDBError("IDEMPOTENCY_CONFLICT", `idempotencyKey ${JSON.stringify(key.slice(0, 80))} was already applied ${what}; this ${op} was not applied`);
  }
  return decodeResult(kept.result);
}

/** The retention option, checked: a positive number of hours, 24 by default. */
export function keyRetentionHours(value: unknown, name: string): number {
  if (value === undefined) return DEFAULT_KEY_RETENTION_HOURS;
  if (typeof value !== "number" || !Number.isFinite(value) || value <= 0) {
    throw invalidArgument(`option ${name} must be a positive number of hours, got ${String(value)}`);
  }
  return value;
}

/**
 * A write's call split in two: its arguments for the engine, and the key its trailing
 * `WriteOptions` gives (null: none). That object sits right after the operation's own parameters
 * (the catalogue's `maxArgs`), the method's last.
 */
export function splitWriteOptions(op: WriteOpName, args: readonly unknown[]): { args: unknown[]; key: string | null } {
  const at = OPERATIONS[op].maxArgs;
  arity(args, at + 1, op);
  if (args.length <= at) return { args: [...args], key: null };
  const write = args[at];
  if (write !== undefined && write !== null && (typeof write !== "object" || Array.isArray(write))) {
    throw invalidArgument(`${op}: its last argument must be { idempotencyKey }, got ${Array.isArray(write) ? "an array" : typeof write}`);
  }
  const key = parseKey((write as { idempotencyKey?: unknown } | null | undefined)?.idempotencyKey, op);
  return { args: args.slice(0, at), key };
}

/**
 * Argument checking for every operation. The daemon receives arguments from any client, and
 * direct mode from any JavaScript caller, so both run the same checks and fail with the same
 * `INVALID_ARGUMENT`. The documented limits keep one request from pinning memory or the lock.
 */
import { invalidArgument } from "../errors.js";
import { wellFormed, withWellFormedKeys } from "./well-formed.js";
import { pythonJsonText } from "./python-json.js";

/** Longest id, source, role, model, title looked up, filter entry or search query. */
export const MAX_NAME_LENGTH = 4096;
/**
 * Largest text field (content, system prompt, reasoning, serialized JSON), in UTF-8 bytes; also
 * the most the text fields of one message or one new session hold together, so that whatever
 * direct mode accepts fits in one frame to the daemon (16 MiB) and both modes accept the same.
 */
export const MAX_TEXT_BYTES = 15 * 1024 * 1024;
/** Most entries in a filter list. */
export const MAX_FILTER_ENTRIES = 1000;
/** Largest `limit` a listing or search accepts. */
export const MAX_LIMIT = 100_000;

export type Args = readonly unknown[];

function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return typeof value === "string" ? "a string" : `${typeof value}`;
}

/** A required string of bounded length, well-formed (see well-formed.ts). */
export function str(value: unknown, name: string, maxLength = MAX_NAME_LENGTH): string {
  if (typeof value !== "string") throw invalidArgument(`${name} must be a string, got ${describe(value)}`);
  if (value.length > maxLength) {
    throw invalidArgument(`${name} is too long (${value.length} characters, max ${maxLength})`);
  }
  return wellFormed(value);
}

/** A required, non-empty string. */
export function nonEmpty(value: unknown, name: string): string {
  const s = str(value, name);
  if (s.length === 0) throw invalidArgument(`${name} must not be empty`);
  return s;
}

/** An optional string: undefined and null both mean "not given". */
export function optStr(value: unknown, name: string, maxLength = MAX_NAME_LENGTH): string | null {
  return value === undefined || value === null ? null : str(value, name, maxLength);
}

/** A large text field (message content, system prompt), bounded in UTF-8 bytes. */
export function optText(value: unknown, name: string): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== "string") throw invalidArgument(`${name} must be a string or null, got ${describe(value)}`);
  checkTextSize(value, name);
  return wellFormed(value);
}

function checkTextSize(value: string, name: string): void {
  // A string of n UTF-16 units holds at most 3n UTF-8 bytes: only long strings need counting.
  if (value.length * 3 > MAX_TEXT_BYTES && Buffer.byteLength(value, "utf8") > MAX_TEXT_BYTES) {
    throw invalidArgument(`${name} is too large (over ${MAX_TEXT_BYTES} bytes)`);
  }
}

/** The text fields of one request together stay within MAX_TEXT_BYTES (see there). */
export function checkTotalText(name: string, texts: ReadonlyArray<string | null>): void {
  const present = texts.filter((t): t is string => t !== null);
  if (present.reduce((n, t) => n + t.length * 3, 0) <= MAX_TEXT_BYTES) return;
  const bytes = present.reduce((n, t) => n + Buffer.byteLength(t, "utf8"), 0);
  if (bytes > MAX_TEXT_BYTES) {
    throw invalidArgument(`${name} is too large: its text fields hold ${bytes} bytes together, over ${MAX_TEXT_BYTES}`);
  }
}

/** A finite number, or null when the caller sent null explicitly, or undefined when absent. */
export function optNumber(value: unknown, name: string): number | null | undefined {
  if (value === undefined || value === null) return value;
  if (typeof value !== "number" || !Number.isFinite(value)) {
    throw invalidArgument(`${name} must be a finite number or null, got ${describe(value)}`);
  }
  return value;
}

export function optInteger(value: unknown, name: string): number | null {
  return optCount(value, name) ?? null;
}

/**
 * A time a row records (a message's `timestamp`): Unix seconds, finite and after the epoch, as
 * the reference stores `time.time()`. Undefined when absent or null, so a write without one
 * keeps the idempotency digest it had before the field existed.
 */
export function optTimestamp(value: unknown, name: string): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "number" || !Number.isFinite(value) || value <= 0) {
    throw invalidArgument(`${name} must be a finite number of seconds since the epoch, greater than 0, got ${
      typeof value === "number" ? String(value) : describe(value)}`);
  }
  return value;
}

/** A token count: an integer within ±(2^53 - 1), or null sent explicitly, or undefined when absent. */
export function optCount(value: unknown, name: string): number | null | undefined {
  const n = optNumber(value, name);
  if (n === undefined || n === null) return n;
  if (!Number.isSafeInteger(n)) throw invalidArgument(`${name} must be an integer within ±(2^53 - 1), got ${n}`);
  return n;
}

/**
 * `<counter>Bound` (`usage.inputTokensBound`…, `msg.tokenCountBound`): a count the Python client
 * sends as the reference's sqlite3 binds it (a non-whole number, a text or bytes:
 * `update_token_counts(sid, input_tokens=5.5)`, `append_message(…, token_count="abc")`), for the
 * reference's SQL to store as it does (5.5 a REAL, `'abc'` a TEXT, bytes a BLOB in the INTEGER
 * column). Only these fields take them: the plain count keeps its integer rule for every other
 * caller. Null when absent.
 */
export function optBoundCount(value: unknown, name: string): number | string | Uint8Array | null {
  if (value === undefined || value === null) return null;
  if (typeof value === "number" && Number.isFinite(value)) return value;
  if (typeof value === "string") return str(value, name);
  if (value instanceof Uint8Array) {
    if (value.length > MAX_NAME_LENGTH) throw invalidArgument(`${name} must be at most ${MAX_NAME_LENGTH} bytes, got ${value.length}`);
    return value;
  }
  throw invalidArgument(`${name} must be a finite number, a string or bytes, got ${describe(value)}`);
}

/** A non-negative integer with a default, at most `max`. */
export function count(value: unknown, name: string, fallback: number, max = MAX_LIMIT): number {
  if (value === undefined || value === null) return fallback;
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0) {
    throw invalidArgument(`${name} must be a non-negative integer, got ${describe(value)} ${String(value)}`);
  }
  if (value > max) throw invalidArgument(`${name} must be at most ${max}, got ${value}`);
  return value;
}

export function optBool(value: unknown, name: string, fallback: boolean): boolean {
  if (value === undefined || value === null) return fallback;
  if (typeof value !== "boolean") throw invalidArgument(`${name} must be a boolean, got ${describe(value)}`);
  return value;
}

/** An optional list of strings: null when absent, else a bounded array of bounded strings. */
export function optStrList(value: unknown, name: string): string[] | null {
  if (value === undefined || value === null) return null;
  if (!Array.isArray(value)) throw invalidArgument(`${name} must be an array of strings, got ${describe(value)}`);
  if (value.length > MAX_FILTER_ENTRIES) {
    throw invalidArgument(`${name} has too many entries (${value.length}, max ${MAX_FILTER_ENTRIES})`);
  }
  return value.map((v, i) => str(v, `${name}[${i}]`));
}

/** An optional options object; only its own properties are ever read. */
export function optObject(value: unknown, name: string): Readonly<Record<string, unknown>> {
  if (value === undefined || value === null) return {};
  if (typeof value !== "object" || Array.isArray(value) || value instanceof Uint8Array) {
    throw invalidArgument(`${name} must be an object, got ${describe(value)}`);
  }
  return value as Record<string, unknown>;
}

/** Reads an own property only, so `__proto__` tricks and inherited keys are never seen. */
export function field(obj: Readonly<Record<string, unknown>>, key: string): unknown {
  return Object.prototype.hasOwnProperty.call(obj, key) ? obj[key] : undefined;
}

/** Python's truthiness, which decides whether a JSON field is stored at all (`[]`, `{}` store NULL). */
export function truthy(value: unknown): boolean {
  if (value === undefined || value === null || value === false || value === 0 || value === "") return false;
  if (Array.isArray(value)) return value.length > 0;
  if (typeof value === "object" && !(value instanceof Uint8Array)) return Object.keys(value).length > 0;
  return true;
}

/**
 * Refuses values JSON would quietly turn into something else (a Map into `{}`): only plain
 * objects and arrays nest, besides objects that say how they serialize (`toJSON`, e.g. a Date),
 * which are stored as that. BigInt is refused. The daemon client sends exactly this (see
 * client/wire-args.ts), so both modes store or refuse the same values.
 */
function plainOnly(this: unknown, key: string, value: unknown): unknown {
  const original = (this as Record<string, unknown>)[key];
  const serializesItself = typeof (original as { toJSON?: unknown } | null)?.toJSON === "function";
  if (typeof original === "object" && original !== null && !Array.isArray(original) && !serializesItself) {
    const proto = Object.getPrototypeOf(original) as unknown;
    if (proto !== Object.prototype && proto !== null) {
      throw new TypeError(`${(original as object).constructor?.name ?? "a non-plain object"} is not plain JSON data`);
    }
  }
  if (typeof original === "bigint" || typeof original === "function" || typeof original === "symbol") {
    throw new TypeError(`a ${typeof original} is not JSON data`);
  }
  if (typeof value === "string") return wellFormed(value);
  if (typeof value === "object" && value !== null && !Array.isArray(value)) return withWellFormedKeys(value);
  return value;
}

/**
 * JSON text for a field stored only when truthy, spelled as the reference's `json.dumps` spells
 * it (python-json.ts); checked for size and serializability.
 */
export function optJson(value: unknown, name: string): string | null {
  if (!truthy(value)) return null;
  let text: string | undefined;
  try {
    text = JSON.stringify(value, plainOnly);
  } catch (err) {
    throw invalidArgument(`${name} cannot be serialized as JSON: ${(err as Error).message}`);
  }
  if (text === undefined) throw invalidArgument(`${name} cannot be serialized as JSON`);
  text = pythonJsonText(text);
  checkTextSize(text, name);
  return text;
}

/** A JSON column as stored (`text`), and the value it holds (which counts tool calls). */
export interface JsonColumn {
  text: string | null;
  value: unknown;
}

/**
 * A JSON column given either as a value (`key`, serialized by optJson) or as JSON text the
 * client serialized itself (`<key>Json`): the Python client sends its own `json.dumps` text, which
 * keeps what MessagePack cannot carry into JavaScript (`1.0` as opposed to `1`, the order of keys
 * that look like integers), so the stored bytes are the reference's. The text must be one JSON
 * value; stored only when that value is truthy, like a value.
 */
export function jsonColumn(obj: Readonly<Record<string, unknown>>, key: string, prefix: string): JsonColumn {
  const value = field(obj, key);
  const raw = field(obj, `${key}Json`);
  if (raw === undefined || raw === null) return { text: optJson(value, `${prefix}.${key}`), value };
  const name = `${prefix}.${key}Json`;
  if (value !== undefined && value !== null) throw invalidArgument(`give ${prefix}.${key} or ${name}, not both`);
  if (typeof raw !== "string") throw invalidArgument(`${name} must be a string of JSON text, got ${describe(raw)}`);
  checkTextSize(raw, name);
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch (err) {
    throw invalidArgument(`${name} is not JSON text: ${(err as Error).message}`);
  }
  return { text: truthy(parsed) ? wellFormed(raw) : null, value: parsed };
}

/** Fails when more positional arguments arrive than the operation takes. */
export function arity(args: Args, max: number, op: string): void {
  if (!Array.isArray(args)) throw invalidArgument(`${op}: args must be an array`);
  if (args.length > max) throw invalidArgument(`${op} takes at most ${max} arguments, got ${args.length}`);
}

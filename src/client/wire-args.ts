/**
 * What the daemon client sends for a call, so that the daemon stores exactly what direct mode
 * would (same results, same errors). MessagePack would send a BigInt as a plain integer, and
 * inside a JSON field would not apply `toJSON` (a Date would become an extension type, a class
 * instance its fields) and would send a Map as an ordinary map, where direct mode refuses BigInt
 * and serializes JSON fields with JSON.stringify, refusing what is not plain data. So a BigInt is
 * refused anywhere, and inside the JSON fields `toJSON` is applied and anything else that is not
 * plain data is refused, with INVALID_ARGUMENT, before anything is sent. Elsewhere values travel
 * as they are and the daemon's checks judge them as direct mode's do. Done without the engine's
 * checks, so the client never loads the SQLite driver.
 */
import { invalidArgument } from "../errors.js";
import { OPERATIONS, type OpName } from "../operation-catalogue.js";

/** One call's copy: `jsonFields`, the fields its operation's direct mode serializes with JSON.stringify (the catalogue's). */
interface WireCopy {
  readonly op: OpName;
  readonly jsonFields: ReadonlySet<string>;
  /** The objects being copied, so a cycle is refused as JSON.stringify refuses it. */
  readonly within: Set<object>;
}

const JSON_FIELDS = new Map<OpName, ReadonlySet<string>>(Object.entries(OPERATIONS).map(([op, facts]) => [op as OpName, new Set(facts.jsonFields)]));

export function argsForWire(op: OpName, args: readonly unknown[]): unknown[] {
  const copy: WireCopy = { op, jsonFields: JSON_FIELDS.get(op)!, within: new Set() };
  const wire = new Array<unknown>(args.length);
  for (let i = 0; i < args.length; i++) wire[i] = asWireValue(copy, args[i]);
  return wire;
}

// Loops and plain functions, no callbacks: this runs for every call, in code a client making one
// call at a time never runs often enough for the JIT to optimize.

/** A value outside the JSON fields: unchanged but for the JSON fields found within it. */
function asWireValue(c: WireCopy, value: unknown): unknown {
  if (typeof value === "bigint") throw invalidArgument(`${c.op}: a bigint is not accepted (give a number)`);
  if (typeof value !== "object" || value === null) return value;
  if (Array.isArray(value)) {
    enter(c, value);
    const copy = new Array<unknown>(value.length);
    for (let i = 0; i < value.length; i++) copy[i] = asWireValue(c, value[i]);
    c.within.delete(value);
    return copy;
  }
  if (!isPlainObject(value)) return value;
  enter(c, value);
  const copy: Record<string, unknown> = {};
  const record = value as Record<string, unknown>;
  for (const k of Object.keys(record)) {
    const item = record[k];
    setOwn(copy, k, c.jsonFields.has(k) ? asJsonData(c, item, k) : asWireValue(c, item));
  }
  c.within.delete(value);
  return copy;
}

/** A value inside a JSON field, as JSON.stringify sees it. */
function asJsonData(c: WireCopy, value: unknown, key: string): unknown {
  if (typeof value === "bigint") throw invalidArgument(`${c.op}: a bigint is not JSON data`);
  if (typeof value !== "object" || value === null) return value;
  const toJSON = (value as { toJSON?: unknown }).toJSON;
  if (typeof toJSON === "function") return asJsonData(c, toJSON.call(value, key) as unknown, key);
  if (Array.isArray(value)) {
    enter(c, value);
    const copy = new Array<unknown>(value.length);
    for (let i = 0; i < value.length; i++) copy[i] = asJsonData(c, value[i], String(i));
    c.within.delete(value);
    return copy;
  }
  if (!isPlainObject(value)) {
    throw invalidArgument(`${c.op}: ${(value as object).constructor?.name ?? "a non-plain object"} is not plain JSON data`);
  }
  enter(c, value);
  const copy: Record<string, unknown> = {};
  const record = value as Record<string, unknown>;
  for (const k of Object.keys(record)) setOwn(copy, k, asJsonData(c, record[k], k));
  c.within.delete(value);
  return copy;
}

/** Marks an array or plain object as being copied; one met again within itself is a cycle, INVALID_ARGUMENT. */
function enter(c: WireCopy, value: object): void {
  if (c.within.has(value)) throw invalidArgument(`${c.op}: a circular structure is not JSON data`);
  c.within.add(value);
}

function isPlainObject(value: object): boolean {
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}

function setOwn(copy: Record<string, unknown>, k: string, item: unknown): void {
  // A `__proto__` key is defined, so it stays an own key and never becomes the prototype; every
  // other key is assigned (defining each would turn every copy into a slow dictionary object).
  if (k === "__proto__") Object.defineProperty(copy, k, { value: item, enumerable: true, writable: true, configurable: true });
  else copy[k] = item;
}

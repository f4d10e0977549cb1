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
  return args.map((arg) => asWireValue(copy, arg));
}

/** A value outside the JSON fields: unchanged but for the JSON fields found within it. */
function asWireValue(c: WireCopy, value: unknown): unknown {
  if (typeof value === "bigint") throw invalidArgument(`${c.op}: a bigint is not accepted (give a number)`);
  if (typeof value !== "object" || value === null) return value;
  if (!Array.isArray(value) && !isPlainObject(value)) return value;
  return copyOnce(c, value, (k, v) => (c.jsonFields.has(k) ? asJsonData(c, v, k) : asWireValue(c, v)));
}

/** A value inside a JSON field, as JSON.stringify sees it. */
function asJsonData(c: WireCopy, value: unknown, key: string): unknown {
  if (typeof value === "bigint") throw invalidArgument(`${c.op}: a bigint is not JSON data`);
  if (typeof value !== "object" || value === null) return value;
  const toJSON = (value as { toJSON?: unknown }).toJSON;
  if (typeof toJSON === "function") return asJsonData(c, toJSON.call(value, key) as unknown, key);
  if (!Array.isArray(value) && !isPlainObject(value)) {
    throw invalidArgument(`${c.op}: ${(value as object).constructor?.name ?? "a non-plain object"} is not plain JSON data`);
  }
  return copyOnce(c, value, (k, v) => asJsonData(c, v, k));
}

/** A copy of an array or plain object with each item mapped; a cycle is INVALID_ARGUMENT. */
function copyOnce(c: WireCopy, value: object, map: (key: string, item: unknown) => unknown): unknown {
  if (c.within.has(value)) throw invalidArgument(`${c.op}: a circular structure is not JSON data`);
  c.within.add(value);
  try {
    return Array.isArray(value) ? value.map((item: unknown, i) => map(String(i), item)) : copyObject(value, map);
  } finally {
    c.within.delete(value);
  }
}

function isPlainObject(value: object): boolean {
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}

function copyObject(value: object, map: (key: string, item: unknown) => unknown): Record<string, unknown> {
  const copy: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    // A `__proto__` key is defined, so it stays an own key and never becomes the prototype; every
    // other key is assigned (defining each would turn every copy into a slow dictionary object).
    if (k === "__proto__") Object.defineProperty(copy, k, { value: map(k, v), enumerable: true, writable: true, configurable: true });
    else copy[k] = map(k, v);
  }
  return copy;
}

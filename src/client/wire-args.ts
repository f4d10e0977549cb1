/**
 * What the daemon client sends for a call, so that the daemon stores exactly what direct mode
 * would (same results, same errors). MessagePack would not apply `toJSON` (a Date would become an
 * extension type, a class instance its fields), would send a BigInt as a plain integer and a Map
 * as an ordinary map, where direct mode's JSON serialization applies `toJSON` and refuses the
 * others. So each `toJSON` is applied here as JSON.stringify applies it, and a BigInt or a value
 * that is not plain data is refused with INVALID_ARGUMENT before anything is sent. Done without
 * the engine's checks, which the daemon runs, so the client never loads the SQLite driver.
 */
import { invalidArgument } from "../errors.js";

export function argsForWire(op: string, args: readonly unknown[]): unknown[] {
  return args.map((arg, i) => asPlainData(op, arg, String(i)));
}

function asPlainData(op: string, value: unknown, key: string): unknown {
  if (typeof value === "bigint") throw invalidArgument(`${op}: a bigint is not JSON data (give a number)`);
  if (typeof value !== "object" || value === null) return value;
  const toJSON = (value as { toJSON?: unknown }).toJSON;
  if (typeof toJSON === "function") return asPlainData(op, toJSON.call(value, key) as unknown, key);
  if (Array.isArray(value)) return value.map((item, i) => asPlainData(op, item, String(i)));
  // Bytes travel as MessagePack binary; the daemon's checks refuse them where direct mode does.
  if (value instanceof Uint8Array) return value;
  const proto = Object.getPrototypeOf(value) as unknown;
  if (proto !== Object.prototype && proto !== null) {
    throw invalidArgument(`${op}: ${(value as object).constructor?.name ?? "a non-plain object"} is not plain JSON data`);
  }
  const copy: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    // defineProperty, so a `__proto__` key stays an own key and never becomes the prototype.
    Object.defineProperty(copy, k, { value: asPlainData(op, v, k), enumerable: true, writable: true, configurable: true });
  }
  return copy;
}

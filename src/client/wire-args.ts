/**
 * What the daemon client sends for a call, so that the daemon stores exactly what direct mode
 * would (SPEC §2: same results, same errors). The arguments go through the operation's own checks
 * first, so a value direct mode refuses (a BigInt, a Map, a text over the limit) is refused here
 * with the same error instead of being turned into something else by MessagePack; then every
 * `toJSON` is applied as JSON.stringify applies it, which MessagePack would not do for plain objects.
 */
import { isOpName, operations } from "../engine/operations.js";

export function argsForWire(op: string, args: unknown[]): unknown[] {
  if (!isOpName(op)) return args;
  operations[op].parse(args);
  return args.map((arg, i) => applyToJSON(arg, String(i)));
}

function applyToJSON(value: unknown, key: string): unknown {
  if (typeof value !== "object" || value === null) return value;
  const toJSON = (value as { toJSON?: unknown }).toJSON;
  if (typeof toJSON === "function") return applyToJSON(toJSON.call(value, key) as unknown, key);
  if (Array.isArray(value)) return value.map((item, i) => applyToJSON(item, String(i)));
  const proto = Object.getPrototypeOf(value) as unknown;
  if (proto !== Object.prototype && proto !== null) return value;
  const copy: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    // defineProperty, so a `__proto__` key stays an own key and never becomes the prototype.
    Object.defineProperty(copy, k, { value: applyToJSON(v, k), enumerable: true, writable: true, configurable: true });
  }
  return copy;
}

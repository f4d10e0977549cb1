/**
 * REAL stays REAL on the wire (issue 30, item 3): a reply's values of the REAL columns (times,
 * costs) go out as MessagePack float 64 even when whole, so a Python client gets `0.0` and
 * `1700000000.0` where the reference returns floats, not the ints msgpackr would write. Known
 * by name: the schema's REAL columns and the listings' REAL aliases. Decoded JSON columns are
 * the caller's own data and are not entered (an int there stays an int).
 */
import { encodeValue, Real } from "./frame-codec.js";

const REAL_KEYS: ReadonlySet<string> = new Set([
  "started_at", "ended_at", "estimated_cost_usd", "actual_cost_usd", "timestamp", "last_active", "session_started",
]);
const JSON_KEYS: ReadonlySet<string> = new Set(["tool_calls", "reasoning_details", "codex_reasoning_items", "model_config"]);

/**
 * Wraps, in place, the whole-number values under REAL keys in `value` (a reply's result, owned by
 * the reply: it came from a worker thread and is encoded once). Other numbers already go out as
 * float 64.
 */
export function markReals(value: unknown): void {
  if (Array.isArray(value)) {
    for (const item of value) if (typeof item === "object" && item !== null) markReals(item);
    return;
  }
  if (typeof value !== "object" || value === null || value instanceof Uint8Array || value instanceof Real) return;
  const record = value as Record<string, unknown>;
  for (const key of Object.keys(record)) {
    const item = record[key];
    if (typeof item === "number") {
      if (REAL_KEYS.has(key) && Number.isInteger(item)) record[key] = new Real(item);
    } else if (typeof item === "object" && item !== null && !JSON_KEYS.has(key)) {
      markReals(item);
    }
  }
}

/**
 * A reply's result with its REAL values marked, encoded as `EncodedResult` carries it: the
 * MessagePack bytes, one per character (latin1). What a reader thread hands the main thread: a
 * string crosses as one copy, where a Uint8Array would cost the main thread an ArrayBuffer per
 * reply to collect. Marks `result` in place.
 */
export function encodeResult(result: unknown): string {
  markReals(result);
  const bytes = encodeValue(result);
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("latin1");
}

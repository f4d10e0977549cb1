/**
 * A keyed write is remembered by the SHA-256 of `[op, params]` as JSON, bytes as their hex
 * (issue 25). Digests are kept in the file and compared across modes and versions, so the text
 * hashed must not change with how it is computed: with bytes anywhere in the arguments and without.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { test } from "node:test";
import { writeDigest } from "../../src/operations/idempotency-keys.js";

/** The digest as issue 25 defines it, computed the plain way. */
function expected(op: string, params: unknown): string {
  const text = JSON.stringify([op, params], (_key, value: unknown) =>
    value instanceof Uint8Array ? { bytes: Buffer.from(value).toString("hex") } : value,
  );
  return createHash("sha256").update(text).digest("hex");
}

test("writeDigest: the SHA-256 of [op, params] as JSON, for arguments with and without bytes", () => {
  const cases: Array<[string, unknown]> = [
    ["appendMessage", { sessionId: "s", message: { role: "user", content: "héllo \u2028 wörld", toolCalls: [{ id: "c1", args: { n: 1.5 } }] } }],
    ["createSession", { id: "s", source: "cli", model: null, extra: undefined }],
    ["endSession", ["s", "done"]],
    ["appendMessage", { sessionId: "s", message: { role: "user", content: "x", tokenCountBound: new Uint8Array([0, 1, 254, 255]) } }],
    ["appendMessage", { nested: [[{ deep: [new Uint8Array([7])] }]] }],
    ["importSession", { blob: Buffer.from("abc") }],
  ];
  for (const [op, params] of cases) assert.equal(writeDigest(op, params), expected(op, params), JSON.stringify(op));
  assert.notEqual(writeDigest("appendMessage", { b: new Uint8Array([1]) }), writeDigest("appendMessage", { b: { 0: 1 } }), "bytes hash as their hex, not as an object");
});

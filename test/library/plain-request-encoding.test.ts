/**
 * The client's own encoder of plain requests (client/plain-request-encoder.ts) writes the bytes
 * msgpackr writes for the same request, frame for frame, and leaves whatever is not plain data
 * to the general path.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { encodePlainRequest } from "../../src/client/plain-request-encoder.js";
import { decodeBody, encodeFrame } from "../../src/protocol/frame-codec.js";
import { HEADER_BYTES } from "../../src/protocol/frame-limits.js";

const DEADLINE = 1_765_000_000_123;

function viaMsgpackr(id: number, op: string, args: unknown[], key: string | null): Buffer {
  const value = { id, op, args, timeoutMs: 30_000, deadlineEpochMs: DEADLINE };
  return Buffer.from(encodeFrame(key === null ? value : { ...value, idempotencyKey: key }));
}

const PLAIN: unknown[][] = [
  [],
  ["s1", { role: "user", content: "hello" }],
  ["s1", { role: "assistant", content: "x".repeat(70_000), toolCalls: [{ id: "t", type: "function", args: { a: [1, 2, 3] } }] }],
  ["é café ☕ 😀 中文", "\ud800 lone", "z\udfffz".repeat(40), "", "a".repeat(31), "a".repeat(32), "é".repeat(200)],
  [0, 1, 127, 128, 255, 256, 65_535, 65_536, 2 ** 32 - 1, 2 ** 32, -1, -32, -33, -128, -129, -32_768, -32_769, -(2 ** 31), -(2 ** 31) - 1],
  [0.5, -0.0, NaN, Infinity, -Infinity, Number.MAX_SAFE_INTEGER, 1e300, DEADLINE],
  [true, false, null, undefined, [undefined, null], { gone: undefined, kept: null }],
  [Array.from({ length: 20 }, (_, i) => i), Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`k${i}`, i])), Array.from({ length: 70_000 }, () => 1)],
  [Object.assign(Object.create(null) as object, { bare: 1 }), { "1": "a", b: "c", __proto__x: 2 }, [[[[[["deep"]]]]]]],
];

test("plain arguments are encoded as msgpackr encodes them, byte for byte, and decode to the same request", () => {
  let id = 1;
  for (const args of PLAIN) {
    for (const key of [null, "auto-0b6a2c1e-5d0f-4a8e-9b1d-7f3e2a6c4b10-1z"]) {
      const frame = encodePlainRequest(id, "appendMessage", args, 30_000, DEADLINE, key);
      assert.ok(frame !== null, `encoded: ${JSON.stringify(args).slice(0, 80)}`);
      assert.deepEqual(Buffer.from(frame), viaMsgpackr(id, "appendMessage", args, key));
      assert.equal(frame.readUInt32BE(0), frame.length - HEADER_BYTES);
      id = id * 7 + 300;
    }
  }
});

test("frames written one after another stay intact: none is written over by the next", () => {
  const frames = Array.from({ length: 500 }, (_, i) => ({ i, frame: encodePlainRequest(i, "appendMessage", ["s", { content: "m".repeat(i * 37) }], 5, DEADLINE, null)! }));
  for (const { i, frame } of frames) {
    const request = decodeBody(frame.subarray(HEADER_BYTES)) as { id: number; args: [string, { content: string }] };
    assert.equal(request.id, i);
    assert.equal(request.args[1].content, "m".repeat(i * 37));
  }
});

test("what is not plain data is left to the general path", () => {
  class Thing {
    x = 1;
  }
  const cycle: unknown[] = [];
  cycle.push(cycle);
  let deep: unknown = "bottom";
  for (let i = 0; i < 100; i++) deep = [deep];
  for (const odd of [new Date(0), new Map(), new Set(), new Uint8Array(2), Buffer.from("ab"), 1n, Symbol("s"), () => 1, new Thing(), cycle, deep, [new Date(0)], { when: new Date(0) }]) {
    assert.equal(encodePlainRequest(1, "appendMessage", ["s", odd], 5, DEADLINE, null), null);
  }
  // Nothing of a dropped frame is left: the next one is whole.
  const next = encodePlainRequest(2, "ping", [], 30_000, DEADLINE, null)!;
  assert.deepEqual(Buffer.from(next), viaMsgpackr(2, "ping", [], null));
});

/**
 * The client's hand decoder of small replies (client/small-reply-decoder.ts) gives what msgpackr
 * gives for the same bytes, and leaves every other form to it.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { decodeSmallReply } from "../../src/client/small-reply-decoder.js";
import { decodeBody, encodeValue } from "../../src/protocol/frame-codec.js";

test("small plain replies decode as msgpackr decodes them", () => {
  const replies: unknown[] = [
    { id: 1, ok: true, result: 42 },
    { id: 300, ok: true, result: null },
    { id: 70_000, ok: true, result: "s-1" },
    { id: 2 ** 32 - 1, ok: false, error: { code: "TIMEOUT", message: "too late" } },
    { id: 5, ok: true, result: [1, -1, -32, -33, -128, -129, -32_768, -32_769, -(2 ** 31), 255, 256, 65_535, 65_536] },
    { id: 5, ok: true, result: [0.5, -2.25, 1e300, 2 ** 40, true, false, null] },
    { id: 6, ok: true, result: { a: { b: { c: [[], {}] } }, "": "", k: "x".repeat(31), l: "y".repeat(200) } },
    { id: 7, ok: true, result: 1_765_000_000.5 },
  ];
  for (const reply of replies) {
    const bytes = encodeValue(reply);
    assert.deepEqual(decodeSmallReply(bytes), decodeBody(bytes, true));
    assert.deepEqual(decodeSmallReply(bytes), reply);
  }
});

test("other forms, and malformed bytes, are left to msgpackr", () => {
  const others: unknown[] = [
    { id: 1, ok: true, result: "café" },
    { id: 1, ok: true, result: Array.from({ length: 16 }, (_, i) => i) },
    { id: 1, ok: true, result: Buffer.from("ab") },
    { id: 1, ok: true, result: "z".repeat(600) },
    { id: 1, ok: true, result: [[[[[[[[[["deep"]]]]]]]]]] },
    JSON.parse('{"id":1,"ok":true,"result":{"__proto__":{"x":1}}}') as unknown,
  ];
  for (const reply of others) assert.equal(decodeSmallReply(encodeValue(reply)), undefined);
  // A 64-bit integer (another client's encoder may write one).
  assert.equal(decodeSmallReply(Buffer.from([0x81, 0xa1, 0x6e, 0xcf, 0, 0, 1, 0, 0, 0, 0, 0])), undefined);
  const whole = encodeValue({ id: 1, ok: true, result: 42 });
  for (let cut = 0; cut < whole.length; cut++) assert.equal(decodeSmallReply(whole.subarray(0, cut)), undefined);
  assert.equal(decodeSmallReply(Buffer.concat([whole, Buffer.from([0xc0])])), undefined);
  assert.equal(decodeSmallReply(Buffer.from([0xc1])), undefined);
  assert.equal(decodeSmallReply(Buffer.from([0x81, 0x01, 0x02])), undefined);
});

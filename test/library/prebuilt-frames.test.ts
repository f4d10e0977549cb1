/**
 * The frames the daemon puts around bytes encoded elsewhere (protocol/frame-codec.ts): a reader
 * thread's encoded result (`resultFrame`) and a watch's chunk (`chunkFrame`) are, byte for byte,
 * what `encodeFrame` makes of the same reply, whatever the request id's width.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { chunkFrame, decodeBody, EncodedResult, encodeFrame, encodeValue, Real, resultFrame } from "../../src/protocol/frame-codec.js";
import { encodeResult, markReals } from "../../src/protocol/wire-reals.js";

const IDS = [0, 1, 0x7f, 0x80, 0xff, 0x100, 0xffff, 0x1_0000, 2 ** 32 - 1];
const RESULTS: unknown[] = [
  null,
  42,
  "café",
  [{ id: "s1", started_at: 1_700_000_000, ended_at: null, estimated_cost_usd: 0, title: "t".repeat(300) }],
  { messages: [{ role: "user", content: "x".repeat(70_000), timestamp: 1_765_000_000.25, tool_calls: [{ n: 1 }] }] },
  Buffer.from([0, 1, 2, 255]),
];

/** What the reader thread sends (`encodeResult` marks its argument: a copy), as the reader pool hands it on. */
function encodedByReader(result: unknown): EncodedResult {
  return new EncodedResult(encodeResult(structuredClone(result)));
}

test("a result encoded by a reader thread frames as the main thread would encode the reply", () => {
  for (const id of IDS) {
    for (const result of RESULTS) {
      const marked = structuredClone(result);
      markReals(marked);
      const expected = encodeFrame({ id, ok: true, result: marked });
      assert.deepEqual(resultFrame(id, encodedByReader(result)), expected, `id ${id}`);
    }
  }
});

test("whole-number REAL values stay float 64 through the reader's encoding", () => {
  const frame = resultFrame(9, encodedByReader([{ started_at: 1_700_000_000, message_count: 3 }]));
  const body = frame.subarray(4);
  assert.equal(frame.readUInt32BE(0), body.length);
  assert.deepEqual(decodeBody(body), { id: 9, ok: true, result: [{ started_at: 1_700_000_000, message_count: 3 }] });
  // 0xcb and the double's bytes, not an integer's.
  const real = Buffer.alloc(9);
  real[0] = 0xcb;
  real.writeDoubleBE(1_700_000_000, 1);
  assert.ok(body.includes(real));
  assert.ok(body.includes(Buffer.from(encodeValue(new Real(1_700_000_000)))));
});

test("a watch chunk frames as encodeFrame frames {id, chunk}", () => {
  for (const id of IDS) {
    const chunk = [{ kind: "message", id: 3, content: "hello" }];
    assert.deepEqual(chunkFrame(id, encodeValue(chunk)), encodeFrame({ id, chunk }), `id ${id}`);
  }
});

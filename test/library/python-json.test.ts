/**
 * JSON columns are spelled as the reference's `json.dumps` spells them (issue 30, item 3): a
 * table of values, and random floats across every magnitude, against Python's own json.dumps.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { pythonJsonText } from "../../src/operations/python-json.js";
import { Child, lastJsonLine, runToSuccess } from "../helpers/processes.js";

async function pythonDumps(values: unknown[]): Promise<string[]> {
  const script = "import json, sys; print(json.dumps([json.dumps(v) for v in json.loads(sys.argv[1])]))";
  return lastJsonLine<string[]>(await runToSuccess(new Child("python3", ["-c", script, JSON.stringify(values)])));
}

test("pythonJsonText gives json.dumps's bytes: separators, ASCII escapes, float spelling", async () => {
  const values: unknown[] = [
    { a: 1, b: [1, 2, { c: null }], d: true, e: false, "": "" },
    ["héllo", "日本語", "😀 \ud83d\ude00", "\u2028\u2029", "\x7f", "\x00\x01\x1f\b\f\n\r\t", "\"q\" \\ / ,:{}[]"],
    { "key, with: separators": "value, with: separators", "é": { "ü": ["ß"] } },
    [0.1, 0.5, 1.25, -2.5, 123.456, 1e-4, 1.5e-4, 9.99e-5, 1e-5, 1.5e-7, -3.2e-10, 5e-324, 1.7976931348623157e308],
    [0, -1, 42, 2 ** 53 - 1, 1e15, 1e20, 1e21, 1.5e300, 123456789.125],
    [[], {}, [[]], [{}], { x: [] }],
  ];
  for (let i = 0; i < 200; i++) {
    const magnitude = 10 ** (Math.floor(Math.random() * 40) - 20);
    values.push([Math.random() * magnitude, -Math.random() * magnitude]);
  }
  const expected = await pythonDumps(values);
  values.forEach((value, i) => assert.equal(pythonJsonText(JSON.stringify(value)), expected[i], JSON.stringify(value)));
});

test("pythonJsonText handles megabytes of text without a stack overflow", () => {
  const text = `${"日本".repeat(500_000)}${"x\n".repeat(200_000)}${"a".repeat(1_000_000)}`;
  const out = pythonJsonText(JSON.stringify([text]));
  assert.equal(out.length, 2 + 2 + 1_000_000 * 6 + 200_000 * 3 + 1_000_000);
  assert.equal(JSON.parse(out)[0], text);
});

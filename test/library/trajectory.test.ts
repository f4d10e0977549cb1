/**
 * Trajectories (SPEC §9): one JSON line per saved run, default file names by outcome, text kept
 * as written, whole lines under concurrent writers, and a failed save never fails the caller.
 */
import assert from "node:assert/strict";
import { mkdirSync, readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { convertScratchpadToThink, hasIncompleteScratchpad, saveTrajectory } from "../../src/index.js";
import { compiledFixture, gatePath, releaseTogether, runToSuccess, spawnNode, type Child } from "../helpers/processes.js";
import { tempDir } from "../helpers/temp-dir.js";
import type { TrajectoryWriterConfig } from "../fixtures/trajectory-writer.js";

interface Line {
  conversations: Array<{ from: string; value: string }>;
  timestamp: string;
  model: string;
  completed: boolean;
}

function readLines(file: string): Line[] {
  const text = readFileSync(file, "utf8");
  assert.ok(text.endsWith("\n"), "every line is terminated");
  return text.slice(0, -1).split("\n").map((line) => JSON.parse(line) as Line);
}

function trajectoryWriter(config: TrajectoryWriterConfig, cwd?: string): Child {
  return spawnNode(compiledFixture("trajectory-writer"), [JSON.stringify(config)], { cwd });
}

const ISO_8601 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})?$/;

test("without a file name, completed runs go to trajectory_samples.jsonl and failed ones to failed_trajectories.jsonl", async (t) => {
  const cwd = tempDir(t);
  const before = Date.now();
  await runToSuccess(trajectoryWriter({ writer: "ok", count: 1, padBytes: 10, completed: true }, cwd));
  await runToSuccess(trajectoryWriter({ writer: "bad", count: 2, padBytes: 10, completed: false }, cwd));
  const after = Date.now();

  assert.deepEqual(readdirSync(cwd).sort(), ["failed_trajectories.jsonl", "trajectory_samples.jsonl"]);
  const [sample] = readLines(join(cwd, "trajectory_samples.jsonl"));
  const failed = readLines(join(cwd, "failed_trajectories.jsonl"));
  assert.ok(sample);
  assert.deepEqual(Object.keys(sample), ["conversations", "timestamp", "model", "completed"]);
  assert.equal(sample.completed, true);
  assert.equal(sample.model, "fixture-model");
  assert.equal(sample.conversations[0]?.value, "ok:0");
  assert.deepEqual(failed.map((l) => [l.completed, l.conversations[0]?.value]), [[false, "bad:0"], [false, "bad:1"]]);

  for (const line of [sample, ...failed]) {
    assert.match(line.timestamp, ISO_8601);
    const at = Date.parse(line.timestamp);
    assert.ok(at >= before - 1000 && at <= after + 1000, `${line.timestamp} is the time of the save`);
  }
});

test("non-ASCII text is written as is, not \\u-escaped, one line per save", (t) => {
  const file = join(tempDir(t), "out.jsonl");
  const text = "héllo 世界 🚀 — \"quoted\"\nsecond line\ttab";
  saveTrajectory([{ from: "human", value: text }], "modèle-ü", false, file);
  saveTrajectory([{ from: "gpt", value: "ok" }], "m", true, file);

  const raw = readFileSync(file, "utf8");
  assert.ok(raw.includes("héllo 世界 🚀 —"), raw);
  assert.ok(raw.includes("modèle-ü"));
  assert.doesNotMatch(raw, /\\u[0-9a-fA-F]{4}/);
  const lines = readLines(file);
  assert.equal(lines.length, 2, "a newline inside the text stays escaped inside its line");
  assert.deepEqual(lines[0], { conversations: [{ from: "human", value: text }], timestamp: lines[0]?.timestamp, model: "modèle-ü", completed: false });
  assert.equal(lines[1]?.completed, true);
});

const PROCESSES = 4;
const LINES_EACH = 200;
const PAD_BYTES = 8 * 1024;

test(`${PROCESSES} processes saving ${LINES_EACH} lines of ~8 KB each at once never interleave lines`, async (t) => {
  const dir = tempDir(t);
  const file = join(dir, "shared.jsonl");
  const gate = gatePath(dir);
  const writers = Array.from({ length: PROCESSES }, (_, i) => `w${i}-${"abcdefgh"[i]}`);
  const children = writers.map((writer) => trajectoryWriter({ writer, count: LINES_EACH, padBytes: PAD_BYTES, completed: true, filename: file, gate }));
  t.after(() => children.forEach((c) => c.kill()));
  await releaseTogether(children, gate);
  for (const child of children) await runToSuccess(child);

  const lines = readLines(file); // every line parses
  assert.equal(lines.length, PROCESSES * LINES_EACH);
  const seen = new Set<string>();
  for (const line of lines) {
    const [tag, , padding] = line.conversations;
    const writer = tag?.value.split(":")[0] ?? "";
    assert.ok(writers.includes(writer), tag?.value);
    assert.equal(padding?.value, writer.repeat(PAD_BYTES).slice(0, PAD_BYTES), "the line is whole and unmixed");
    seen.add(tag?.value ?? "");
  }
  assert.equal(seen.size, PROCESSES * LINES_EACH, "no line lost, none doubled");
});

test("a save that cannot be written is logged and does not throw", async (t) => {
  const dir = tempDir(t);
  const directory = join(dir, "a-directory.jsonl");
  mkdirSync(directory);
  for (const filename of [directory, join(dir, "no", "such", "dir.jsonl")]) {
    const result = await runToSuccess(trajectoryWriter({ writer: "x", count: 1, padBytes: 1, completed: true, filename }));
    assert.equal(result.stdout, "ready\ndone\n", "the caller carried on after the failed save");
    assert.ok(result.stderr.includes(filename), `the failure is logged, naming the file: ${result.stderr}`);
  }
  assert.deepEqual(readdirSync(dir), ["a-directory.jsonl"]);
  assert.deepEqual(readdirSync(directory), []);
});

test("convertScratchpadToThink turns every scratchpad tag into a think tag", () => {
  assert.equal(
    convertScratchpadToThink("<REASONING_SCRATCHPAD>a</REASONING_SCRATCHPAD> b <REASONING_SCRATCHPAD>c</REASONING_SCRATCHPAD>"),
    "<think>a</think> b <think>c</think>",
  );
  assert.equal(convertScratchpadToThink("<REASONING_SCRATCHPAD>unfinished"), "<think>unfinished");
  assert.equal(convertScratchpadToThink("no tags, <think> kept"), "no tags, <think> kept");
  assert.equal(convertScratchpadToThink(""), "");
});

test("hasIncompleteScratchpad is true only for an opening tag without a closing one", () => {
  assert.equal(hasIncompleteScratchpad("<REASONING_SCRATCHPAD>still thinking"), true);
  assert.equal(hasIncompleteScratchpad("<REASONING_SCRATCHPAD>done</REASONING_SCRATCHPAD>"), false);
  assert.equal(hasIncompleteScratchpad("plain answer"), false);
  assert.equal(hasIncompleteScratchpad("stray </REASONING_SCRATCHPAD>"), false);
  assert.equal(hasIncompleteScratchpad(""), false);
});

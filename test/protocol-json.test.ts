/**
 * docs/protocol.json, the protocol's machine-readable description (and its copy in the Python
 * package): what the code generates, as committed, saying what the code does; and the Python
 * client's view of it (its operation kinds, codes and limits) the same as TypeScript's.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { resolveDaemonOptions } from "../src/daemon/daemon-options.js";
import { ERROR_CODES } from "../src/errors.js";
import { OPERATIONS, WIRE_ONLY_OPS, isWriteOp } from "../src/operation-catalogue.js";
import { MAX_LIMIT, MAX_NAME_LENGTH } from "../src/operations/args.js";
import { MAX_KEY_LENGTH } from "../src/operations/idempotency-keys.js";
import { MAX_TITLE_LENGTH } from "../src/operations/title-sanitizer.js";
import { CONTROL_OPS, FAULT_OPS } from "../src/protocol/control.js";
import { DEFAULT_MAX_FRAME_BYTES, HEADER_BYTES, MAX_REPLY_FRAME_BYTES } from "../src/protocol/frame-limits.js";
import { PROTOCOL_VERSION } from "../src/protocol/messages.js";
import { PROTOCOL_JSON_PATHS, protocolJsonText, type ProtocolDescription } from "../src/protocol/protocol-description.js";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const DOCS_JSON = "docs/protocol.json";

function committed(path: string): string | null {
  const shown = spawnSync("git", ["show", `HEAD:${path}`], { cwd: ROOT, encoding: "utf8", maxBuffer: 1 << 24 });
  return shown.status === 0 ? shown.stdout : null;
}

test("docs/protocol.json and the Python package's copy are what the code generates", () => {
  const generated = protocolJsonText();
  for (const path of PROTOCOL_JSON_PATHS) {
    assert.equal(readFileSync(join(ROOT, path), "utf8"), generated, `${path} is stale: run npm run build`);
  }
});

test("the committed protocol.json files are what the code generates (commit the files npm run build wrote)", (t) => {
  const inGit = spawnSync("git", ["rev-parse", "--is-inside-work-tree"], { cwd: ROOT, encoding: "utf8" });
  if (inGit.status !== 0) return t.skip("not a git checkout");
  for (const path of PROTOCOL_JSON_PATHS) {
    assert.equal(committed(path), protocolJsonText(), `${path} as committed (HEAD) differs from what the code generates`);
  }
});

test("the description says what the code does: kinds, keys, streams, control ops, codes, limits", () => {
  const json = JSON.parse(readFileSync(join(ROOT, DOCS_JSON), "utf8")) as ProtocolDescription;
  const ops = new Map(json.operations.map((op) => [op.name, op]));
  assert.equal(ops.size, json.operations.length, "one entry per op");
  assert.deepEqual([...ops.keys()], [...Object.keys(OPERATIONS), ...Object.keys(WIRE_ONLY_OPS), ...CONTROL_OPS]);
  for (const [name, facts] of Object.entries(OPERATIONS)) {
    const op = ops.get(name)!;
    assert.equal(op.kind, isWriteOp(name) ? "write" : "read", name);
    assert.equal(op.keyed, isWriteOp(name), name);
    assert.equal(op.streamed, facts.kind === "stream" || facts.kind === "watch", name);
    assert.equal(op.maxArgs, facts.maxArgs, name);
    assert.deepEqual([op.slow, op.deletesMessages, op.jsonFields], [facts.slow, facts.deletesMessages, facts.jsonFields], name);
  }
  assert.deepEqual(ops.get("appendMessage")!.jsonFields, ["toolCalls", "reasoningDetails", "codexReasoningItems"]);
  assert.equal(ops.get("exportAll")!.streamed, true);
  assert.equal(ops.get("unwatch")!.subscription, true);
  for (const name of CONTROL_OPS) {
    assert.equal(ops.get(name)!.kind, "control", name);
    assert.equal(ops.get(name)!.testOnly, (FAULT_OPS as readonly string[]).includes(name), name);
  }
  assert.deepEqual(json.errorCodes, ERROR_CODES);
  assert.equal(json.protocol, PROTOCOL_VERSION);
  assert.deepEqual(
    [json.frame.headerBytes, json.frame.maxFrameBytes, json.frame.maxReplyFrameBytes],
    [HEADER_BYTES, DEFAULT_MAX_FRAME_BYTES, MAX_REPLY_FRAME_BYTES],
  );
  const dir = mkdtempSync(join(tmpdir(), "sdb-pj-"));
  try {
    const daemon = resolveDaemonOptions({ path: join(dir, "state.db") });
    assert.deepEqual(json.connection, {
      maxInFlight: daemon.maxInFlightPerConnection,
      maxRequestBytes: daemon.maxRequestBytesPerConnection,
      maxReplyBufferBytes: daemon.maxReplyBufferBytes,
    }, "the daemon's defaults");
    assert.equal(daemon.maxFrameBytes, json.frame.maxFrameBytes);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  assert.deepEqual(
    [json.limits.idempotencyKeyMaxLength, json.limits.titleMaxLength, json.limits.limitMax, json.limits.nameMaxLength],
    [MAX_KEY_LENGTH, MAX_TITLE_LENGTH, MAX_LIMIT, MAX_NAME_LENGTH],
  );
});

/** What the Python client took from its protocol.json, as it uses it. */
const PYTHON_VIEW = `
import json, sys
sys.path.insert(0, sys.argv[1])
from sessiondb import errors, protocol, idempotency, bridge, reference_args, text
from sessiondb.protocol_description import OPERATION_KINDS, KEYED_OPS
print(json.dumps({
    "kinds": OPERATION_KINDS, "keyed": sorted(KEYED_OPS), "codes": sorted(errors._CLASSES), "known": sorted(errors.KNOWN_CODES),
    "protocol": protocol.PROTOCOL_VERSION, "header": protocol.HEADER.size, "request": protocol.MAX_REQUEST_FRAME_BYTES,
    "reply": protocol.MAX_REPLY_FRAME_BYTES, "key": idempotency.MAX_KEY_LENGTH, "title": text.MAX_TITLE_LENGTH,
    "limit": reference_args.MAX_LIMIT, "name": bridge.MAX_NAME,
}))
`;

test("the Python client's view is TypeScript's: operation kinds, keyed writes, error codes, frame and argument limits", (t) => {
  const python = spawnSync("python3", ["-c", PYTHON_VIEW, join(ROOT, "python")], { encoding: "utf8" });
  if (python.error !== undefined || /No module named 'msgpack'/.test(python.stderr)) return t.skip("no python3 with msgpack");
  assert.equal(python.status, 0, python.stderr);
  const view = JSON.parse(python.stdout) as Record<string, unknown>;
  const kinds: Record<string, string> = {};
  for (const [name, facts] of Object.entries({ ...OPERATIONS, ...WIRE_ONLY_OPS })) kinds[name] = facts.kind === "write" ? "write" : "read";
  for (const name of CONTROL_OPS) kinds[name] = "control";
  assert.deepEqual(view.kinds, kinds);
  assert.deepEqual(view.keyed, Object.keys(OPERATIONS).filter((name) => isWriteOp(name)).sort());
  assert.deepEqual(view.codes, [...ERROR_CODES].sort(), "the Python client has a class for every code, and no other");
  assert.deepEqual(view.known, [...ERROR_CODES].sort());
  assert.deepEqual(
    [view.protocol, view.header, view.request, view.reply, view.key, view.title, view.limit, view.name],
    [PROTOCOL_VERSION, HEADER_BYTES, DEFAULT_MAX_FRAME_BYTES, MAX_REPLY_FRAME_BYTES, MAX_KEY_LENGTH, MAX_TITLE_LENGTH, MAX_LIMIT, MAX_NAME_LENGTH],
  );
});

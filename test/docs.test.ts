/**
 * The documentation the repository holds: the protocol description names every operation and
 * every error code a client can meet, and the README links only to files that are in the repository.
 */
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { ERROR_CODES } from "../src/errors.js";
import { OP_NAMES } from "../src/operation-catalogue.js";
import { CONTROL_OPS } from "../src/protocol/control.js";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

test("docs/protocol.md: every op (with its arguments and result), every error code, the rules a client keeps", () => {
  const doc = readFileSync(join(ROOT, "docs", "protocol.md"), "utf8");
  const documentedOps = new Set([...doc.matchAll(/^\| `(\w+)` \|/gm)].map((m) => m[1]));
  for (const op of [...OP_NAMES, ...CONTROL_OPS.filter((op) => !op.startsWith("fault"))]) {
    assert.ok(documentedOps.has(op), `op ${op} has a row in docs/protocol.md`);
  }
  for (const code of ERROR_CODES) assert.match(doc, new RegExp(`\`${code}\``), `error code ${code} is documented`);
  for (const rule of ["timeoutMs", "OUTCOME_UNKNOWN", "half-close", "readOnly", "107", "sha-256", "owned by", "big-end"]) {
    assert.ok(doc.toLowerCase().includes(rule.toLowerCase()), `docs/protocol.md covers ${rule}`);
  }
});

test("README: links to docs/protocol.md and to no file outside the repository", () => {
  const readme = readFileSync(join(ROOT, "README.md"), "utf8");
  assert.match(readme, /\]\(docs\/protocol\.md\)/);
  assert.doesNotMatch(readme, /\.\.\/shared|SPEC\.md/);
  for (const [, target] of readme.matchAll(/\]\(([^)#\s]+)(?:#[^)]*)?\)/g)) {
    if (/^[a-z]+:/.test(target!)) continue;
    assert.ok(existsSync(join(ROOT, target!)), `README links to ${target}, which is in the repository`);
  }
});

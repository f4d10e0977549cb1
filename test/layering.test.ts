/**
 * The layers a newcomer relies on: loading the daemon client (what a process that only talks to
 * a daemon loads) must not load the SQLite driver, while direct mode does. Checked in a child
 * process whose module loader refuses `better-sqlite3`.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { test } from "node:test";

const REFUSE_DRIVER = `export async function resolve(specifier, context, next) {
  if (specifier === "better-sqlite3") throw new Error("better-sqlite3 was loaded");
  return next(specifier, context);
}`;

/** Imports `module` (relative to this file) in a child whose loader refuses the driver. */
function importWithoutDriver(module: string): { status: number | null; stderr: string } {
  const url = new URL(module, import.meta.url).href;
  const script = `import { register } from "node:module";
register("data:text/javascript," + encodeURIComponent(${JSON.stringify(REFUSE_DRIVER)}));
await import(${JSON.stringify(url)});`;
  const child = spawnSync(process.execPath, ["--input-type=module", "-e", script], { encoding: "utf8" });
  return { status: child.status, stderr: child.stderr };
}

test("loading the daemon client, the wire protocol or the operation catalogue does not load better-sqlite3", () => {
  for (const module of ["../src/client/daemon-client.js", "../src/protocol/messages.js", "../src/operation-catalogue.js"]) {
    const { status, stderr } = importWithoutDriver(module);
    assert.equal(status, 0, `${module}: ${stderr}`);
  }
});

test("direct mode does load it (so the check above can fail)", () => {
  const { status, stderr } = importWithoutDriver("../src/direct/direct-store.js");
  assert.notEqual(status, 0);
  assert.match(stderr, /better-sqlite3 was loaded/);
});

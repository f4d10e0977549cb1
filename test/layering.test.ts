/**
 * The layers a newcomer relies on: loading the daemon client (what a process that only talks to
 * a daemon loads) must not load the SQLite driver, while direct mode does; and nothing loads
 * node-postgres until a PostgreSQL database is opened (it was a tenth of a second of every
 * start). Checked in a child process whose module loader refuses the package.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { test } from "node:test";

/** Runs `body` (an ES module's text, which may await) in a child whose loader refuses `pkg`. */
function runRefusing(pkg: string, body: string): { status: number | null; stderr: string } {
  const refuse = `export async function resolve(specifier, context, next) {
  if (specifier === ${JSON.stringify(pkg)}) throw new Error(${JSON.stringify(`${pkg} was loaded`)});
  return next(specifier, context);
}`;
  const script = `import { register } from "node:module";
register("data:text/javascript," + encodeURIComponent(${JSON.stringify(refuse)}));
${body}`;
  const child = spawnSync(process.execPath, ["--input-type=module", "-e", script], { encoding: "utf8" });
  return { status: child.status, stderr: child.stderr };
}

/** Imports `module` (relative to this file) in a child whose loader refuses `pkg`. */
function importRefusing(pkg: string, module: string): { status: number | null; stderr: string } {
  return runRefusing(pkg, `await import(${JSON.stringify(new URL(module, import.meta.url).href)});`);
}

test("loading the daemon client, the wire protocol or the operation catalogue does not load better-sqlite3", () => {
  for (const module of ["../src/client/daemon-client.js", "../src/protocol/messages.js", "../src/operation-catalogue.js"]) {
    const { status, stderr } = importRefusing("better-sqlite3", module);
    assert.equal(status, 0, `${module}: ${stderr}`);
  }
});

test("direct mode does load it (so the check above can fail)", () => {
  const { status, stderr } = importRefusing("better-sqlite3", "../src/direct/direct-store.js");
  assert.notEqual(status, 0);
  assert.match(stderr, /better-sqlite3 was loaded/);
});

test("loading the library, the daemon or the CLI's commands does not load node-postgres", () => {
  for (const module of ["../src/index.js", "../src/daemon/daemon.js", "../src/cli/commands/serve.js", "../src/cli/commands/copy.js", "../src/pg/pg-store.js"]) {
    const { status, stderr } = importRefusing("pg", module);
    assert.equal(status, 0, `${module}: ${stderr}`);
  }
});

test("opening a PostgreSQL pool does load it (so the check above can fail)", () => {
  const connection = new URL("../src/pg/pg-connection.js", import.meta.url).href;
  const { status, stderr } = runRefusing(
    "pg",
    `const { openPgPool } = await import(${JSON.stringify(connection)});
await openPgPool("postgres://nobody@127.0.0.1:1/none", { max: 1, applicationName: "layering test" });`,
  );
  assert.notEqual(status, 0);
  assert.match(stderr, /pg was loaded/);
});

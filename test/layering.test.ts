/**
 * The layers a newcomer relies on: loading the daemon client (what a process that only talks to
 * a daemon loads) must not load the SQLite driver, while direct mode does; and nothing loads
 * node-postgres until a PostgreSQL database is opened (it was a tenth of a second of every
 * start). Checked in a child process whose module loader refuses the package.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

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

/** Imports `modules` (relative to this file) in one child whose loader refuses `pkg`. */
function importRefusing(pkg: string, ...modules: string[]): { status: number | null; stderr: string } {
  return runRefusing(pkg, modules.map((m) => `await import(${JSON.stringify(new URL(m, import.meta.url).href)});`).join("\n"));
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

test("loading the library, the daemon or any of the CLI's commands does not load node-postgres", () => {
  const commands = readdirSync(new URL("../src/cli/commands/", import.meta.url)).filter((f) => f.endsWith(".js"));
  assert.ok(commands.includes("serve.js") && commands.includes("copy.js"), `the commands' modules: ${commands.join(", ")}`);
  const modules = ["../src/index.js", "../src/daemon/daemon.js", "../src/direct/pg-store.js", ...commands.map((f) => `../src/cli/commands/${f}`)];
  const { status, stderr } = importRefusing("pg", ...modules);
  assert.equal(status, 0, stderr);
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

/** The modules where a location's engine is decided: where options are resolved, and nowhere else. */
const ENGINE_DECIDED_IN = ["src/engine-kind.ts"];

/** Each `isPostgresUrl(` call (its definition aside) in the sources under `src/`, as "file:line". */
function isPostgresUrlCalls(): string[] {
  const root = fileURLToPath(new URL("../../", import.meta.url));
  const calls: string[] = [];
  for (const file of readdirSync(join(root, "src"), { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith(".ts"))) {
    const module = relative(root, join(root, "src", file)).split("\\").join("/");
    readFileSync(join(root, "src", file), "utf8").split("\n").forEach((line, i) => {
      if (/\bisPostgresUrl\(/.test(line) && !/\bfunction isPostgresUrl\(/.test(line)) calls.push(`${module}:${i + 1}`);
    });
  }
  return calls;
}

test("a location's engine is decided where options are resolved: isPostgresUrl is called in src/engine-kind.ts only", () => {
  const calls = isPostgresUrlCalls();
  assert.ok(calls.some((c) => c.startsWith("src/engine-kind.ts:")), `the calls read: ${calls.join(", ")}`);
  const elsewhere = calls.filter((c) => !ENGINE_DECIDED_IN.some((m) => c.startsWith(`${m}:`)));
  assert.deepEqual(elsewhere, [], "take the engine from ResolvedOptions.engine, a DatabaseLocation, or ENGINES (src/engine-kind.ts)");
});

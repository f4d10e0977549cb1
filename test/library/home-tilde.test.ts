/**
 * Hermes' home as upstream's `get_hermes_home()` finds it (issue 30, item 4, replacing issue 12's
 * expansion rule): `HERMES_HOME` stripped of surrounding whitespace and never `~`-expanded. A
 * `HERMES_HOME`, `SESSIONDB_PATH` or `--db` beginning with `~` is refused with a message naming
 * the literal folder Hermes would use, and nothing is created.
 */
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test, type TestContext } from "node:test";
import { CLI } from "../helpers/cli.js";
import { Child, lastJsonLine, runToSuccess } from "../helpers/processes.js";
import { tempDir } from "../helpers/temp-dir.js";

const LINE = JSON.stringify({ id: "s1", source: "cli", started_at: 1_700_000_000, messages: [] });

/** Where upstream's `get_hermes_home()` puts the file: its own expression, run by Python. */
async function hermesHomeOf(env: NodeJS.ProcessEnv, cwd: string): Promise<string> {
  const script = "import json, os; from pathlib import Path; v = os.environ.get('HERMES_HOME', '').strip(); " +
    "print(json.dumps(str((Path(v) if v else Path.home() / '.hermes').absolute() / 'state.db')))";
  return lastJsonLine<string>(await runToSuccess(new Child("python3", ["-c", script], { env, cwd })));
}

function setUp(t: TestContext) {
  const dir = tempDir(t);
  const home = join(dir, "home");
  const cwd = join(dir, "cwd");
  mkdirSync(home);
  mkdirSync(cwd);
  const input = join(dir, "one.jsonl");
  writeFileSync(input, `${LINE}\n`);
  const { SESSIONDB_PATH: _path, HERMES_HOME: _home, ...inherited } = process.env;
  const env: NodeJS.ProcessEnv = { ...inherited, HOME: home };
  return { dir, home, cwd, input, env };
}

test("HERMES_HOME with surrounding whitespace names the folder upstream's get_hermes_home() names", async (t) => {
  const { dir, cwd, input, env } = setUp(t);
  env.HERMES_HOME = ` \t${join(dir, "hermes home")}\n `;
  const expected = await hermesHomeOf(env, cwd);
  await runToSuccess(new Child(process.execPath, [CLI, "--json", "import", input], { cwd, env }));
  assert.equal(expected, join(dir, "hermes home", "state.db"));
  assert.ok(existsSync(expected), `the database is at ${expected}`);
  assert.deepEqual(readdirSync(cwd), [], "nothing under the working directory");
});

for (const how of ["HERMES_HOME", "SESSIONDB_PATH", "--db"] as const) {
  test(`${how} beginning with ~ is refused, naming the literal folder, and nothing is created`, async (t) => {
    const { home, cwd, input, env } = setUp(t);
    const args = [CLI, "--json", "import", input];
    let folder: string;
    if (how === "HERMES_HOME") {
      env.HERMES_HOME = " ~/.hermes ";
      folder = join(cwd, "~", ".hermes");
    } else if (how === "SESSIONDB_PATH") {
      env.SESSIONDB_PATH = "~/data/state.db";
      folder = join(cwd, "~", "data", "state.db");
    } else {
      args.splice(1, 0, "--db", "~/cli.db");
      folder = join(cwd, "~", "cli.db");
    }
    const result = await new Child(process.execPath, args, { cwd, env }).done;
    assert.notEqual(result.code, 0, result.stdout);
    assert.match(result.stderr, /INVALID_ARGUMENT/);
    assert.ok(result.stderr.includes(`${how} is "~/`), result.stderr);
    assert.ok(result.stderr.includes(`would use the folder ${folder} (under the working directory)`), result.stderr);
    assert.ok(result.stderr.includes(`e.g. ${home}/`), result.stderr);
    assert.deepEqual(readdirSync(cwd), [], "no directory named ~ was made");
    assert.deepEqual(readdirSync(home), [], "nothing under $HOME either");
  });
}

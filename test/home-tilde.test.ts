/**
 * A literal `~` in `HERMES_HOME`, `SESSIONDB_PATH` or `--db` (issue 12, item 9) resolves as the
 * reference Python resolves it (os.path.expanduser), so the agent and sessiondb share one file.
 */
import assert from "node:assert/strict";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { CLI } from "./helpers/cli.js";
import { Child, lastJsonLine, runToSuccess } from "./helpers/processes.js";
import { tempDir } from "./helpers/temp-dir.js";

const LINE = JSON.stringify({ id: "s1", source: "cli", started_at: 1_700_000_000, messages: [] });

/** Where the reference puts the file for this environment: Python's own expanduser. */
async function pythonExpands(home: string, path: string): Promise<string> {
  const child = new Child("python3", ["-c", "import json, os, sys; print(json.dumps(os.path.expanduser(sys.argv[1])))", path], {
    env: { ...process.env, HOME: home },
  });
  return lastJsonLine<string>(await runToSuccess(child));
}

for (const how of ["HERMES_HOME", "SESSIONDB_PATH", "--db"] as const) {
  test(`${how} with a literal ~ resolves under $HOME, as the reference resolves it`, async (t) => {
    const dir = tempDir(t);
    const home = join(dir, "home");
    const cwd = join(dir, "cwd");
    mkdirSync(home);
    mkdirSync(cwd);
    const input = join(dir, "one.jsonl");
    writeFileSync(input, `${LINE}\n`);
    const { SESSIONDB_PATH: _path, HERMES_HOME: _home, ...inherited } = process.env;
    const env: NodeJS.ProcessEnv = { ...inherited, HOME: home };
    const args = [CLI, "--json", "import", input];
    let expected: string;
    if (how === "HERMES_HOME") {
      env.HERMES_HOME = "~/.hermes";
      expected = join(await pythonExpands(home, "~/.hermes"), "state.db");
    } else if (how === "SESSIONDB_PATH") {
      env.SESSIONDB_PATH = "~/data/state.db";
      expected = await pythonExpands(home, "~/data/state.db");
    } else {
      args.splice(1, 0, "--db", "~/cli.db");
      expected = await pythonExpands(home, "~/cli.db");
    }
    await runToSuccess(new Child(process.execPath, args, { cwd, env }));
    assert.ok(expected.startsWith(home), expected);
    assert.ok(existsSync(expected), `the database is at ${expected}`);
    assert.equal(existsSync(join(cwd, "~")), false, "no directory named ~ was made");
  });
}

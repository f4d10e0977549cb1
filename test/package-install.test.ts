/**
 * The package as users get it: `npm pack`, then a global install of the tarball whose `sessiondb`
 * works, and a consumer project whose strict TypeScript (skipLibCheck off) compiles against the
 * published types. Dependencies come from npm's cache when it has them (`--prefer-offline`);
 * install scripts are skipped and the one native module this project already built
 * (better-sqlite3) is copied in, so no compiler runs.
 */
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const NPM_FLAGS = ["--ignore-scripts", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error"];

function npm(args: string[], cwd: string): string {
  return execFileSync("npm", args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
}

/** Puts this project's compiled better-sqlite3 into an installed copy (whose install script was skipped). */
function copyNativeBuild(installedPackage: string): void {
  const candidates = [join(installedPackage, "node_modules", "better-sqlite3"), join(installedPackage, "..", "better-sqlite3")];
  const target = candidates.find((dir) => spawnSync("test", ["-d", dir]).status === 0);
  assert.ok(target !== undefined, "better-sqlite3 was installed with the package");
  cpSync(join(ROOT, "node_modules", "better-sqlite3", "build"), join(target, "build"), { recursive: true });
}

/** Every type name the public index exports, read from its source. */
function exportedTypeNames(): string[] {
  const index = readFileSync(join(ROOT, "src", "index.ts"), "utf8");
  const names: string[] = [];
  for (const [, list] of index.matchAll(/export (?:type )?\{([^}]*)\}/g)) {
    const typeOnly = new RegExp(`export type \\{${list!.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}\\}`).test(index);
    for (const item of list!.split(",").map((s) => s.trim()).filter(Boolean)) {
      if (typeOnly) names.push(item);
      else if (item.startsWith("type ")) names.push(item.slice(5).trim());
    }
  }
  return names;
}

test(`npm ci on this Node (${process.version}) warns of no engine mismatch (EBADENGINE)`, (t) => {
  const dir = mkdtempSync(join(tmpdir(), "sdb-ci-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  for (const file of ["package.json", "package-lock.json"]) cpSync(join(ROOT, file), join(dir, file));
  const ci = spawnSync("npm", ["ci", "--dry-run", ...NPM_FLAGS.filter((f) => f !== "--loglevel=error")], { cwd: dir, encoding: "utf8" });
  assert.equal(ci.status, 0, ci.stderr);
  assert.doesNotMatch(`${ci.stdout}${ci.stderr}`, /EBADENGINE/);
});

describe("the packed package", () => {
  let dir = "";
  let tarball = "";

  before(() => {
    dir = mkdtempSync(join(tmpdir(), "sdb-pack-"));
    const packed = JSON.parse(npm(["pack", "--json", "--pack-destination", dir], ROOT)) as Array<{ filename: string }>;
    tarball = join(dir, packed[0]!.filename);
  });

  after(() => rmSync(dir, { recursive: true, force: true }));

  test("npm install -g of the tarball puts a working sessiondb on PATH", () => {
    const prefix = join(dir, "global");
    npm(["install", "-g", "--prefix", prefix, tarball, ...NPM_FLAGS], dir);
    copyNativeBuild(join(prefix, "lib", "node_modules", "sessiondb"));
    const bin = join(prefix, "bin", "sessiondb");
    const env = { ...process.env, PATH: `${join(prefix, "bin")}:${process.env.PATH}`, SESSIONDB_PATH: join(dir, "unused.db") };
    const help = spawnSync("sessiondb", ["--help"], { env, encoding: "utf8" });
    assert.equal(help.status, 0, help.stderr);
    assert.match(help.stdout, /^Usage: sessiondb /m);
    for (const command of ["serve", "list", "show", "search", "import", "service"]) assert.match(help.stdout, new RegExp(`^  ${command}\\b`, "m"));

    const db = join(dir, "state.db");
    const line = JSON.stringify({
      id: "s1", source: "cli", started_at: 1, ended_at: null, message_count: 1, tool_call_count: 0, title: "from the tarball",
      parent_session_id: null,
      messages: [{ id: 1, session_id: "s1", role: "user", content: "hello", tool_calls: null, timestamp: 2 }],
    });
    const imported = spawnSync(bin, ["--db", db, "--json", "import", "-"], { env, input: `${line}\n`, encoding: "utf8" });
    assert.equal(imported.status, 0, imported.stderr);
    assert.equal(JSON.parse(imported.stdout).imported, 1);
    const shown = spawnSync(bin, ["--db", db, "title", "s1"], { env, encoding: "utf8" });
    assert.equal(shown.stdout.trim(), "from the tarball", shown.stderr);
  });

  test("a strict consumer project (skipLibCheck off) compiles a file using every exported type", () => {
    const project = join(dir, "consumer");
    mkdirSync(project);
    writeFileSync(join(project, "package.json"), JSON.stringify({ name: "consumer", private: true, type: "module" }));
    const typesNode = JSON.parse(readFileSync(join(ROOT, "node_modules", "@types", "node", "package.json"), "utf8")) as { version: string };
    npm(["install", tarball, `@types/node@${typesNode.version}`, ...NPM_FLAGS], project);
    assert.ok(!readdirSync(join(project, "node_modules")).includes("@types") ||
      !readdirSync(join(project, "node_modules", "@types")).includes("better-sqlite3"), "the driver's types are not installed");
    writeFileSync(join(project, "tsconfig.json"), JSON.stringify({
      compilerOptions: {
        strict: true, skipLibCheck: false, noEmit: true, module: "NodeNext", moduleResolution: "NodeNext", target: "ES2022",
        lib: ["ES2023"], types: ["node"], noUncheckedIndexedAccess: true,
      },
      files: ["use.ts"],
    }));
    const types = exportedTypeNames();
    assert.ok(types.includes("SessionDB") && types.includes("ErrorCode") && types.length >= 20, types.join(", "));
    writeFileSync(join(project, "use.ts"), [
      `import { openSessionDB, SessionDBError, ERROR_CODES, sanitizeTitle, sanitizeFtsQuery, containsCjk, SCHEMA_VERSION } from "sessiondb";`,
      `import type { ${types.join(", ")} } from "sessiondb";`,
      `export type Every = [${types.join(", ")}];`,
      `const db: SessionDB = await openSessionDB({ path: "/tmp/x.db", mode: "direct" } satisfies OpenOptions);`,
      `const rows: RichSessionRow[] = await db.listSessionsRich({ limit: 1 } satisfies ListSessionsOptions);`,
      `const hits: SearchHit[] = await db.searchMessages(sanitizeFtsQuery("x"), { limit: 1 });`,
      `const code: ErrorCode = ERROR_CODES[0];`,
      `const failure = new SessionDBError(code, "m");`,
      `for await (const s of db.exportAll()) { const m: MessageRow | undefined = s.messages[0]; void m; }`,
      `export const used = [rows, hits, failure.code, sanitizeTitle("t"), containsCjk("x"), SCHEMA_VERSION, db.mode];`,
    ].join("\n"));
    const tsc = spawnSync(process.execPath, [join(ROOT, "node_modules", "typescript", "bin", "tsc"), "-p", project], { encoding: "utf8" });
    assert.equal(tsc.status, 0, `tsc failed:\n${tsc.stdout}${tsc.stderr}`);
  });
});

/**
 * The documentation the repository holds is kept true to the code: the protocol description names
 * every operation and error code; the library guide every option, method and code; the CLI guide
 * every command and flag (the daemon guide every `serve` flag); the benchmark guide every option
 * of the bench; every link, anchor and repository path the README and docs/ name exists; and the
 * README stays a short front page that links every guide.
 */
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, normalize, relative } from "node:path";
import { test } from "node:test";
import { fileURLToPath, pathToFileURL } from "node:url";
import { Command } from "commander";
import { ERROR_CODES } from "../src/errors.js";
import { OP_NAMES } from "../src/operation-catalogue.js";
import { CONTROL_OPS } from "../src/protocol/control.js";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const read = (path: string) => readFileSync(join(ROOT, path), "utf8");
const DOCS = readdirSync(join(ROOT, "docs")).filter((name) => name.endsWith(".md")).map((name) => `docs/${name}`);
const MARKDOWN = ["README.md", ...DOCS, "python/README.md"];

/** A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces to dashes. */
function anchorOf(heading: string): string {
  return heading.trim().toLowerCase().replace(/[^\p{L}\p{N}_\- ]/gu, "").replace(/ /g, "-");
}

/** The text outside fenced code blocks. */
function prose(text: string): string {
  return text.replace(/^```[\s\S]*?^```/gm, "");
}

function anchorsOf(path: string): Set<string> {
  return new Set([...prose(read(path)).matchAll(/^#{1,6} (.+)$/gm)].map((m) => anchorOf(m[1]!)));
}

test("docs/protocol.md: every op (with its arguments and result), every error code, the rules a client keeps", () => {
  const doc = read("docs/protocol.md");
  const documentedOps = new Set([...doc.matchAll(/^\| `(\w+)` \|/gm)].map((m) => m[1]));
  for (const op of [...OP_NAMES, ...CONTROL_OPS.filter((op) => !op.startsWith("fault"))]) {
    assert.ok(documentedOps.has(op), `op ${op} has a row in docs/protocol.md`);
  }
  for (const code of ERROR_CODES) assert.match(doc, new RegExp(`\`${code}\``), `error code ${code} is documented`);
  for (const rule of ["timeoutMs", "OUTCOME_UNKNOWN", "half-close", "readOnly", "107", "sha-256", "owned by", "big-end"]) {
    assert.ok(doc.toLowerCase().includes(rule.toLowerCase()), `docs/protocol.md covers ${rule}`);
  }
});

test("README: a short front page, the two quick-start commands, a link to every guide in docs/, nothing outside the repository", () => {
  const readme = read("README.md");
  const lines = readme.split("\n").length;
  assert.ok(lines <= 300, `README.md has ${lines} lines; the rest belongs in docs/`);
  assert.match(readme, /^npm ci && npm start /m);
  assert.match(readme, /^bash \.ci\/run /m);
  for (const doc of DOCS) assert.ok(readme.includes(`](${doc})`), `README links to ${doc}`);
  assert.doesNotMatch(readme, /\.\.\/shared|SPEC\.md/);
});

test("README and docs/: every relative link names a file in the repository, and every #anchor a heading there", () => {
  for (const path of MARKDOWN) {
    for (const [, target, anchor] of prose(read(path)).matchAll(/\]\(([^)#\s]*)(?:#([^)\s]*))?\)/g)) {
      if (/^[a-z]+:/.test(target!)) continue;
      const file = target ? normalize(join(dirname(path), target)) : path;
      assert.ok(!relative(ROOT, join(ROOT, file)).startsWith(".."), `${path} links to ${target}, outside the repository`);
      assert.ok(existsSync(join(ROOT, file)), `${path} links to ${target}, which is in the repository`);
      if (anchor && file.endsWith(".md")) {
        assert.ok(anchorsOf(file).has(anchor), `${path} links to ${file}#${anchor}, a heading there`);
      }
    }
  }
});

test("README and docs/: every source, test, bench or Python path they name exists", () => {
  const pathPattern = /`((?:src|test|bench|python|docs|\.ci)\/[\w./-]*)`/g;
  for (const path of ["README.md", ...DOCS]) {
    for (const [, named] of read(path).matchAll(pathPattern)) {
      const file = named!.replace(/\/$/, "");
      // A built file is named by its source; a glob or a placeholder names no one file.
      if (/[*<>]/.test(file) || file.startsWith("dist/")) continue;
      const candidates = [file, file.replace(/\.js$/, ".ts")];
      assert.ok(candidates.some((c) => existsSync(join(ROOT, c))), `${path} names ${named}, which is not in the repository`);
    }
  }
});

/** The `sessiondb` program with every command registered, as src/cli/main.ts builds it. */
async function cliProgram(): Promise<Command> {
  const program = new Command().name("sessiondb");
  const dir = join(ROOT, "dist", "src", "cli", "commands");
  for (const file of readdirSync(dir).filter((name) => name.endsWith(".js"))) {
    const module = (await import(pathToFileURL(join(dir, file)).href)) as Record<string, unknown>;
    for (const [name, register] of Object.entries(module)) {
      if (name.startsWith("register") && typeof register === "function") register(program);
    }
  }
  return program;
}

function optionsOf(command: Command): string[] {
  return command.options.map((option) => option.long).filter((long): long is string => !!long && long !== "--help");
}

test("docs/cli.md: every command and every flag of it; docs/daemon.md: every flag of serve", async () => {
  const cli = read("docs/cli.md");
  const daemon = read("docs/daemon.md");
  const program = await cliProgram();
  assert.ok(program.commands.length >= 10, "the commands were registered");
  const missing: string[] = [];
  const walk = (command: Command, prefix: string): void => {
    for (const sub of command.commands) {
      const name = `${prefix}${sub.name()}`;
      if (!cli.includes(`\`${name}`)) missing.push(`docs/cli.md: the command ${name}`);
      for (const flag of optionsOf(sub)) {
        const [doc, file] = name === "serve" ? [daemon, "docs/daemon.md"] : [cli, "docs/cli.md"];
        if (!doc.includes(flag)) missing.push(`${file}: ${name} ${flag}`);
      }
      walk(sub, `${name} `);
    }
  };
  walk(program, "");
  for (const flag of ["--db", "--json", "--direct", "--version"]) if (!cli.includes(flag)) missing.push(`docs/cli.md: ${flag}`);
  assert.deepEqual(missing, [], "every command and flag is documented");
});

test("docs/library.md: every open option, every method, every error code", () => {
  const doc = read("docs/library.md");
  const source = read("src/open-options.ts");
  const options = [...source.matchAll(/^ {2}(\w+)\?: /gm)].map((m) => m[1]!);
  assert.ok(options.includes("path") && options.includes("budgetMs"), "the options were read from src/open-options.ts");
  const missing = [
    ...options.filter((option) => !doc.includes(`\`${option}\``) && !doc.includes(`retry.${option}`)).map((o) => `option ${o}`),
    ...OP_NAMES.filter((op) => !doc.includes(`\`${op}\``)).map((op) => `method ${op}`),
    ...ERROR_CODES.filter((code) => !doc.includes(`\`${code}\``)).map((code) => `error code ${code}`),
  ];
  assert.deepEqual(missing, [], "docs/library.md documents every option, method and error code");
});

test("docs/benchmarks.md: every option of the bench", () => {
  const doc = read("docs/benchmarks.md");
  const usage = read("bench/run.ts");
  const flags = [...usage.matchAll(/^ {2}(--[a-z][\w-]*)/gm)].map((m) => m[1]!);
  assert.ok(flags.includes("--full") && flags.includes("--modes"), "the bench's options were read from bench/run.ts");
  assert.deepEqual(flags.filter((flag) => !doc.includes(flag)), [], "docs/benchmarks.md documents every option of the bench");
});

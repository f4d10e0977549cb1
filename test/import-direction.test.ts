/**
 * The direction of the imports (issue 24): every module of the built tree (dist/src, dist/workers)
 * sits in one layer of the table below, and imports only its own folder and the layers beneath
 * it; no cycle, type imports included. Type-only imports vanish from the built .js, so each
 * module's imports are read from its .js and from its .ts source.
 */
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, posix, relative } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

/**
 * The layers, lowest first. A module belongs to the entry with the longest matching prefix
 * (a folder ends with "/"). Folders of one layer do not import each other unless the layer says
 * `siblings`; single files of one layer may (a cycle among them still fails).
 */
const LAYERS: readonly Layer[] = [
  {
    name: "leaf modules (the contract's types, errors, the catalogue, locations and files)",
    modules: [
      "src/errors.ts", "src/version.ts", "src/user-name.ts", "src/regular-file.ts", "src/file-identity.ts",
      "src/file-guard.ts", "src/hermes-home.ts", "src/database-location.ts", "src/socket-path.ts",
      "src/database-files.ts", "src/engine-kind.ts", "src/integrity-report.ts", "src/daemon-control.ts",
      "src/message-types.ts", "src/session-types.ts", "src/watch-types.ts", "src/open-options.ts", "src/session-db.ts",
      "src/operation-catalogue.ts", "src/trajectory.ts",
    ],
  },
  { name: "engine-neutral operations", modules: ["src/operations/"] },
  // The spool's file format and replay loop: the daemon, the handles and the CLI share them.
  { name: "the durable spool", modules: ["src/spool/"] },
  // The two engines share only what lies beneath them: neither imports the other.
  { name: "engines", modules: ["src/sqlite/", "src/pg/"] },
  { name: "resolved options and the store interface", modules: ["src/options.ts", "src/store.ts"] },
  { name: "wire protocol", modules: ["src/protocol/"] },
  { name: "modes", modules: ["src/direct/", "src/client/", "src/daemon/"] },
  // The daemon's threads: the daemon points at their built files by URL and never imports them.
  { name: "the daemon's worker threads", modules: ["workers/"] },
  { name: "public surface", modules: ["src/auto-store.ts", "src/spooling-store.ts", "src/open.ts", "src/index.ts"] },
  { name: "command line", modules: ["src/cli/"] },
];

interface Layer {
  name: string;
  modules: readonly string[];
  siblings?: boolean;
}

/** An import of one module by another ("src/a/b.ts" paths from the repository's root). */
interface Edge {
  from: string;
  to: string;
}

/** Where `module` sits: its layer's index and its folder (the matching table entry), or null. */
export function placeOf(layers: readonly Layer[], module: string): { rank: number; entry: string } | null {
  let best: { rank: number; entry: string } | null = null;
  layers.forEach((layer, rank) => {
    for (const entry of layer.modules) {
      const matches = entry.endsWith("/") ? module.startsWith(entry) : module === entry;
      if (matches && (best === null || entry.length > best.entry.length)) best = { rank, entry };
    }
  });
  return best;
}

/** Every import against the table, in words naming the importing file and the imported one. */
export function layeringProblems(layers: readonly Layer[], modules: readonly string[], edges: readonly Edge[]): string[] {
  const problems: string[] = [];
  for (const m of modules) if (placeOf(layers, m) === null) problems.push(`${m} is in no layer of the table: add it to LAYERS`);
  for (const { from, to } of edges) {
    const a = placeOf(layers, from);
    const b = placeOf(layers, to);
    if (a === null || b === null || a.entry === b.entry) continue;
    const folders = a.entry.endsWith("/") && b.entry.endsWith("/");
    const layer = layers[a.rank]!;
    if (b.rank > a.rank) {
      problems.push(`${from} imports ${to}: "${layer.name}" must not import the higher layer "${layers[b.rank]!.name}"`);
    } else if (b.rank === a.rank && folders && layer.siblings !== true) {
      problems.push(`${from} imports ${to}: ${a.entry} and ${b.entry} are both "${layer.name}" and do not import each other`);
    }
  }
  return problems;
}

/** Every cycle of the graph, as a path `a → b → … → a` (one per strongly connected part). */
export function cycles(edges: readonly Edge[]): string[] {
  const next = new Map<string, string[]>();
  for (const { from, to } of edges) next.set(from, [...(next.get(from) ?? []), to]);
  const state = new Map<string, "open" | "done">();
  const stack: string[] = [];
  const found: string[] = [];
  const visit = (m: string): void => {
    state.set(m, "open");
    stack.push(m);
    for (const n of next.get(m) ?? []) {
      if (state.get(n) === "open") found.push([...stack.slice(stack.indexOf(n)), n].join(" → "));
      else if (!state.has(n)) visit(n);
    }
    stack.pop();
    state.set(m, "done");
  };
  for (const m of [...next.keys()].sort()) if (!state.has(m)) visit(m);
  return found;
}

// `import … from "x"`, `export … from "x"`, `import "x"` and `import("x")`, relative only
// (packages are not layers); at a line's start, so a comment's example is not taken.
const STATIC = /^\s*(?:import|export)\b[^;]*?\bfrom\s*["'](\.{1,2}\/[^"']+)["']/gm;
const BARE = /^\s*import\s*["'](\.{1,2}\/[^"']+)["']/gm;
const DYNAMIC = /\bimport\(\s*["'](\.{1,2}\/[^"']+)["']\s*\)/g;

/** The relative specifiers `text` imports. */
export function specifiers(text: string): string[] {
  return [...text.matchAll(STATIC), ...text.matchAll(BARE), ...text.matchAll(DYNAMIC)].map((m) => m[1]!);
}

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const DIST = join(ROOT, "dist");

function filesUnder(dir: string, suffix: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, encoding: "utf8" })
    .filter((f) => f.endsWith(suffix) && !f.endsWith(".d.ts"))
    .map((f) => join(dir, f));
}

/** The built tree's modules and imports, each module named by its source ("src/a/b.ts"). */
function builtGraph(): { modules: string[]; edges: Edge[] } {
  const modules = ["src", "workers"].flatMap((d) => filesUnder(join(DIST, d), ".js")).map((f) =>
    relative(DIST, f).split("\\").join("/").replace(/\.js$/, ".ts"),
  );
  const edges: Edge[] = [];
  for (const module of modules) {
    const built = readFileSync(join(DIST, module.replace(/\.ts$/, ".js")), "utf8");
    const source = existsSync(join(ROOT, module)) ? readFileSync(join(ROOT, module), "utf8") : "";
    for (const spec of new Set([...specifiers(built), ...specifiers(source)])) {
      const to = posix.normalize(posix.join(posix.dirname(module), spec)).replace(/\.js$/, ".ts");
      edges.push({ from: module, to });
    }
  }
  return { modules, edges };
}

test("no import runs against the layering, and every module is in a layer", () => {
  const { modules, edges } = builtGraph();
  assert.ok(modules.includes("src/sqlite/connection.ts") && modules.includes("workers/writer.ts"), `modules read: ${modules.length}`);
  assert.ok(edges.length > 300, `imports read: ${edges.length}`);
  const problems = layeringProblems(LAYERS, modules, edges);
  assert.deepEqual(problems, [], `imports against the layering:\n  ${problems.join("\n  ")}`);
});

test("no cycle, type imports included", () => {
  const found = cycles(builtGraph().edges);
  assert.deepEqual(found, [], `import cycles:\n  ${found.join("\n  ")}`);
});

test("the engine folders import no mode folder", () => {
  const { edges } = builtGraph();
  const wrong = edges.filter(
    (e) => /^src\/(sqlite|pg|operations)\//.test(e.from) && /^(src\/(daemon|direct|client|cli)|workers)\//.test(e.to),
  );
  assert.deepEqual(wrong.map((e) => `${e.from} imports ${e.to}`), []);
});

test("neither engine imports the other: what both need lives in src/operations/", () => {
  const { edges } = builtGraph();
  const engine = (m: string) => /^src\/(sqlite|pg)\//.exec(m)?.[1];
  const wrong = edges.filter((e) => engine(e.from) !== undefined && engine(e.to) !== undefined && engine(e.from) !== engine(e.to));
  assert.ok(edges.some((e) => e.from.startsWith("src/pg/") && e.to.startsWith("src/operations/")), "the PostgreSQL engine's imports were read");
  assert.deepEqual(wrong.map((e) => `${e.from} imports ${e.to}`), []);
});

test("the checker fails on an upward import, a sibling import, an unplaced module and a cycle (so the checks above can fail)", () => {
  const layers: Layer[] = [
    { name: "low", modules: ["low/"] },
    { name: "engines", modules: ["a/", "b/"] },
    { name: "high", modules: ["high.ts"] },
  ];
  const edges: Edge[] = [
    { from: "high.ts", to: "a/x.ts" },
    { from: "a/x.ts", to: "low/y.ts" },
    { from: "low/y.ts", to: "high.ts" },
    { from: "a/x.ts", to: "b/z.ts" },
  ];
  const problems = layeringProblems(layers, ["high.ts", "a/x.ts", "b/z.ts", "low/y.ts", "stray.ts"], edges);
  assert.deepEqual(problems, [
    "stray.ts is in no layer of the table: add it to LAYERS",
    'low/y.ts imports high.ts: "low" must not import the higher layer "high"',
    'a/x.ts imports b/z.ts: a/ and b/ are both "engines" and do not import each other',
  ]);
  assert.deepEqual(cycles(edges), ["a/x.ts → low/y.ts → high.ts → a/x.ts"]);
  assert.deepEqual(
    specifiers(`import type { A } from "./a.js";\nexport { b } from "../b.js";\nimport "./c.js";\n * import { d } from "./d.js"\nconst e = await import("./e.js");\nimport x from "pkg";`),
    ["./a.js", "../b.js", "./c.js", "./e.js"],
  );
});

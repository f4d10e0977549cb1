/**
 * `npm run bench:cold-start`: what a short-lived Python process pays (issue 30, item 5; target
 * ≤ 0.3 s for the whole process with no daemon running, ≤ 100 ms for the import). Each run is a
 * fresh interpreter: `import sessiondb` timed inside it, and the whole process timed from spawn
 * to exit for `SessionDB(path)`, `create_session`, `append_message`, `get_messages`, `close()` on
 * an existing file:
 * - cold: no daemon (the client serves the calls from the file and starts one in the background;
 *   it is stopped after each run);
 * - warm: a daemon already serving the file (not its first client);
 * - reference: the same calls as the reference makes them with sqlite3 (test/fixtures/hermes_writer.py),
 *   and a bare `python3 -c pass`, the floor.
 * Medians and 90th percentiles in ms; the JSON goes to bench/results/<timestamp>-cold-start.json.
 * `--python-package DIR` measures another checkout's client (say, before a change).
 */
import { spawn, spawnSync } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { fileURLToPath } from "node:url";

const REPO = fileURLToPath(new URL("../..", import.meta.url));
const CLI = join(REPO, "dist", "src", "cli", "main.js");
const WRITER = join(REPO, "test", "fixtures", "hermes_writer.py");

const { values } = parseArgs({
  options: {
    runs: { type: "string", default: "10" },
    python: { type: "string", default: "python3" },
    "python-package": { type: "string", default: join(REPO, "python") },
    out: { type: "string", default: join(REPO, "bench", "results") },
  },
});
const runs = Number(values.runs);
const python = values.python!;
const pythonPackage = resolve(values["python-package"]!);

const CLIENT = `
import sys, time
started = time.perf_counter()
sys.path.insert(0, ${JSON.stringify(pythonPackage)})
from sessiondb import SessionDB
imported = time.perf_counter()
db = SessionDB(sys.argv[1])
db.create_session("s1", "cli")
db.append_message("s1", "user", "hello")
assert db.get_messages("s1")[-1]["content"] == "hello"
db.close()
print((imported - started) * 1000)
`;
const REFERENCE = `
import sys
sys.path.insert(0, ${JSON.stringify(join(REPO, "test", "fixtures"))})
import hermes_writer as ref
conn = ref.connect(sys.argv[1])
ref.init_schema(conn)
ref.ref_create_session(conn, "s1", "cli")
ref.ref_append_message(conn, "s1", "user", "hello")
conn.execute("SELECT * FROM messages WHERE session_id = ? ORDER BY timestamp, id", ("s1",)).fetchall()
conn.close()
`;

interface Timed {
  ms: number;
  stdout: string;
}

/** Spawn to exit, in ms. */
function timed(args: readonly string[], env: NodeJS.ProcessEnv): Promise<Timed> {
  return new Promise((done, fail) => {
    const started = performance.now();
    const child = spawn(python, args, { env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => (stdout += c));
    child.stderr.on("data", (c: Buffer) => (stderr += c));
    child.on("error", fail);
    child.on("close", (code) => {
      if (code !== 0) fail(new Error(`${python} ${args.join(" ")} exited ${code}: ${stderr}`));
      else done({ ms: performance.now() - started, stdout });
    });
  });
}

function quantile(samples: number[], q: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

function summary(samples: number[]) {
  return { median: Math.round(quantile(samples, 0.5)), p90: Math.round(quantile(samples, 0.9)), runs: samples.length };
}

const work = mkdtempSync(join(tmpdir(), "sdb-cold-"));
const wrapper = join(work, "sessiondb-bin");
writeFileSync(wrapper, `#!/bin/sh\nexec "${process.execPath}" "${CLI}" "$@"\n`);
chmodSync(wrapper, 0o755);
const env: NodeJS.ProcessEnv = { ...process.env, SESSIONDB_BIN: wrapper, XDG_RUNTIME_DIR: join(work, "run") };
delete env.SESSIONDB_PATH;
const clientScript = join(work, "client.py");
const referenceScript = join(work, "reference.py");
writeFileSync(clientScript, CLIENT);
writeFileSync(referenceScript, REFERENCE);

function freshFile(name: string): string {
  const dir = join(work, name);
  mkdirSync(dir);
  const db = join(dir, "state.db");
  spawnSync(python, [WRITER, "create", db], { stdio: "ignore" });
  return db;
}

async function daemonAnswers(db: string): Promise<void> {
  const probe = `import sys; sys.path.insert(0, ${JSON.stringify(pythonPackage)}); from sessiondb import SessionDB; SessionDB(sys.argv[1], autostart=False).close()`;
  for (let i = 0; i < 600; i++) {
    if (spawnSync(python, ["-c", probe, db], { env, stdio: "ignore" }).status === 0) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`no daemon answered for ${db}`);
}

function stopDaemon(db: string): void {
  spawnSync(process.execPath, [CLI, "--db", db, "stop"], { env, stdio: "ignore" });
}

const bare: number[] = [];
const imports: number[] = [];
const cold: number[] = [];
const warm: number[] = [];
const reference: number[] = [];
try {
  for (let i = 0; i < runs; i++) {
    bare.push((await timed(["-c", "pass"], env)).ms);
    const db = freshFile(`cold-${i}`);
    const first = await timed([clientScript, db], env);
    cold.push(first.ms);
    imports.push(Number(first.stdout.trim()));
    // The daemon the cold run started serves the file once it answers: then a warm run.
    await daemonAnswers(db);
    await timed([clientScript, db], env); // the new daemon's first requests start its reader threads
    warm.push((await timed([clientScript, db], env)).ms);
    stopDaemon(db);
    reference.push((await timed([referenceScript, freshFile(`ref-${i}`)], env)).ms);
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}

const result = {
  at: new Date().toISOString(),
  pythonPackage,
  importMs: summary(imports),
  processMs: { cold: summary(cold), warm: summary(warm), reference: summary(reference), bare: summary(bare) },
};
mkdirSync(values.out!, { recursive: true });
const file = join(values.out!, `${result.at.replace(/[:.]/g, "-")}-cold-start.json`);
writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
const row = (name: string, s: { median: number; p90: number }) => `${name.padEnd(44)} ${String(s.median).padStart(6)} ${String(s.p90).padStart(6)}`;
console.log(`Python cold start, ${runs} runs (ms)                 median    p90`);
console.log(row("import sessiondb (inside the process)", result.importMs));
console.log(row("whole process, no daemon running (cold)", result.processMs.cold));
console.log(row("whole process, a daemon serving the file", result.processMs.warm));
console.log(row("whole process, the reference (sqlite3)", result.processMs.reference));
console.log(row("python3 -c pass", result.processMs.bare));
console.log(`written to ${file}`);

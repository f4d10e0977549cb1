/**
 * What the reliability tests share: real `serve` processes with any flag or environment, load
 * client processes, the daemon's RSS and open files read from /proc, and the checks run on the
 * file after an attack (every acknowledged write there once, integrity, counters, FTS).
 */
import { readdirSync, readFileSync } from "node:fs";
import type { TestContext } from "node:test";
import { fileURLToPath } from "node:url";
import { CLI, DaemonProcess, waitUntilServing } from "../helpers/daemon.js";
import { Child, lastJsonLine, runToSuccess } from "../helpers/processes.js";
import { withRaw } from "../helpers/sqlite-files.js";
import type { LoadConfig, LoadReport } from "./fixtures/load-client.js";

/** CI runs shortened soaks and smaller rounds; a local run does the full length. */
export const CI = process.env.CI === "true";

export function scaled<T>(ci: T, full: T): T {
  return CI ? ci : full;
}

export interface ServeSpec {
  /** Reader threads; left out, the daemon picks its default pool. */
  readers?: number;
  walLimitMb?: number;
  /** Passed as `--reader-idle` (seconds). */
  readerIdleSeconds?: number;
  /** Passed as `--socket`. */
  socketPath?: string;
  /** Where the daemon will listen by itself, when that is not `<db>.sock` (not passed on). */
  listensOn?: string;
  /** Extra environment, e.g. `SESSIONDB_FAULT_INJECTION=1`. */
  env?: NodeJS.ProcessEnv;
}

export const FAULTS = { SESSIONDB_FAULT_INJECTION: "1" } as const;

/** `sessiondb serve` on `dbPath`, answering hello; SIGKILLed when the test ends if still running. */
export async function serve(t: TestContext, dbPath: string, spec: ServeSpec = {}): Promise<DaemonProcess> {
  const args = [CLI, "--db", dbPath, "serve"];
  if (spec.readers !== undefined) args.push("--readers", String(spec.readers));
  if (spec.walLimitMb !== undefined) args.push("--wal-limit-mb", String(spec.walLimitMb));
  if (spec.readerIdleSeconds !== undefined) args.push("--reader-idle", String(spec.readerIdleSeconds));
  if (spec.socketPath !== undefined) args.push("--socket", spec.socketPath);
  const child = new Child(process.execPath, args, { env: { ...process.env, ...spec.env } });
  t.after(async () => {
    child.kill();
    await child.done.catch(() => undefined);
  });
  const socketPath = spec.socketPath ?? spec.listensOn ?? `${dbPath}.sock`;
  const hello = await waitUntilServing(child, socketPath);
  return new DaemonProcess(child, dbPath, socketPath, hello);
}

const LOAD_CLIENT = fileURLToPath(new URL("./fixtures/load-client.js", import.meta.url));

/** A load client process (see fixtures/load-client.ts); killed when the test ends if still running. */
export function spawnLoad(t: TestContext, config: LoadConfig): Child {
  const child = new Child(process.execPath, [LOAD_CLIENT, JSON.stringify(config)]);
  t.after(() => child.kill());
  return child;
}

/**
 * The client's report; fails if it exits non-zero or takes longer than `limitMs` from now (a
 * hang: a bound generous enough for a saturated machine, not a speed target).
 */
export async function loadReport(child: Child, limitMs = 180_000): Promise<LoadReport> {
  let timer: NodeJS.Timeout | undefined;
  const hang = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      child.kill();
      reject(new Error(`load client ${child.pid} still running after ${limitMs} ms: it hangs`));
    }, limitMs);
  });
  try {
    return lastJsonLine<LoadReport>(await Promise.race([runToSuccess(child), hang]));
  } finally {
    clearTimeout(timer);
  }
}

/** Resident memory of a process, in bytes. */
export function rssBytes(pid: number): number {
  const match = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  if (match === null) throw new Error(`no VmRSS for pid ${pid}`);
  return Number(match[1]) * 1024;
}

/** Open file descriptors of a process. */
export function fdCount(pid: number): number {
  return readdirSync(`/proc/${pid}/fd`).length;
}

export function mib(bytes: number): string {
  return `${(bytes / 1048576).toFixed(1)} MiB`;
}

export interface FileCheck {
  integrity: string;
  /** Sessions whose message_count differs from their real number of messages. */
  counterMismatches: Array<{ id: string; message_count: number; real: number }>;
  /** Messages missing from the FTS index or indexed twice. */
  ftsIntegrity: string;
  messages: number;
}

/** Integrity, counters and the FTS index of a file no daemon is writing at the moment. */
export function checkFile(path: string): FileCheck {
  return withRaw(path, (db) => {
    db.pragma("busy_timeout = 10000");
    const integrity = db.pragma("integrity_check", { simple: true }) as string;
    const counterMismatches = db
      .prepare(
        `SELECT id, message_count, real FROM (
           SELECT s.id, s.message_count, (SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id) AS real FROM sessions s
         ) WHERE message_count != real`,
      )
      .all() as FileCheck["counterMismatches"];
    let ftsIntegrity = "ok";
    try {
      db.exec("INSERT INTO messages_fts(messages_fts) VALUES('integrity-check')");
    } catch (err) {
      ftsIntegrity = (err as Error).message;
    }
    const messages = (db.prepare("SELECT COUNT(*) AS n FROM messages").get() as { n: number }).n;
    return { integrity, counterMismatches, ftsIntegrity, messages };
  });
}

export interface Reconciled {
  /** Acknowledged writes, each found exactly once with the id it was acknowledged with. */
  acked: number;
  /** Writes whose outcome the client could not know (connection lost), found in the file. */
  unknownApplied: number;
  /** The same, not in the file. */
  unknownMissing: number;
  problems: string[];
}

/**
 * Holds the file against what the load clients were told: every acknowledged write is there
 * once with its id; a write that failed with one of `notAppliedCodes` is not there at all; no
 * write is there twice.
 */
export function reconcile(path: string, clients: Array<{ tag: string; report: LoadReport }>, notAppliedCodes: string[]): Reconciled {
  const rows = withRaw(
    path,
    (db) => db.prepare("SELECT id, substr(content, 1, 80) AS head FROM messages").all() as Array<{ id: number; head: string | null }>,
    { readonly: true },
  );
  const byKey = new Map<string, number[]>();
  for (const row of rows) {
    const [tag, n] = (row.head ?? "").split(" ");
    if (tag === undefined || n === undefined) continue;
    const key = `${tag} ${n}`;
    const ids = byKey.get(key);
    if (ids === undefined) byKey.set(key, [row.id]);
    else ids.push(row.id);
  }
  const result: Reconciled = { acked: 0, unknownApplied: 0, unknownMissing: 0, problems: [] };
  const tags = new Set(clients.map((c) => c.tag));
  for (const [key, ids] of byKey) {
    if (ids.length > 1 && tags.has(key.split(" ")[0]!)) result.problems.push(`${key} is in the file ${ids.length} times`);
  }
  for (const { tag, report } of clients) {
    for (const [seq, id] of report.acked) {
      const ids = byKey.get(`${tag} n${seq}`);
      if (ids === undefined) result.problems.push(`acknowledged ${tag} n${seq} (id ${id}) is missing`);
      else if (id !== -1 && !ids.includes(id)) result.problems.push(`acknowledged ${tag} n${seq} has id ${ids.join()} not ${id}`);
      else result.acked++;
    }
    for (const [seq, code] of report.failed) {
      const found = byKey.has(`${tag} n${seq}`);
      if (notAppliedCodes.includes(code)) {
        if (found) result.problems.push(`${tag} n${seq} failed with ${code} (not applied) but is in the file`);
      } else if (found) result.unknownApplied++;
      else result.unknownMissing++;
    }
  }
  return result;
}

/** Resolves after `ms`; the tests' waits are bounds, never timings. */
export function randomBetween(min: number, max: number): number {
  return min + Math.random() * (max - min);
}

/** What the numbers were measured on: they mean little without it. */
import { arch, cpus, loadavg, platform, release, totalmem } from "node:os";
import Database from "better-sqlite3";
import { VERSION } from "../src/version.js";
import { pythonVersion } from "./paths.js";

export interface Machine {
  cpuModel: string;
  cores: number;
  memoryGiB: number;
  os: string;
  node: string;
  sqlite: string;
  python: string | null;
  sessiondb: string;
  /** 1, 5 and 15 minute load averages when the suite started. */
  loadAverage: number[];
}

export function describeMachine(): Machine {
  const db = new Database(":memory:");
  const sqlite = db.prepare("SELECT sqlite_version()").pluck().get() as string;
  db.close();
  const cpu = cpus();
  return {
    cpuModel: cpu[0]?.model.trim() ?? "unknown",
    cores: cpu.length,
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    os: `${platform()} ${release()} ${arch()}`,
    node: process.version,
    sqlite,
    python: pythonVersion(),
    sessiondb: VERSION,
    loadAverage: loadavg(),
  };
}

/** One line for table headers and chart subtitles. */
export function machineLine(m: Machine, date: string): string {
  return `${m.cores} × ${m.cpuModel}, ${m.memoryGiB} GiB, ${m.os}, Node ${m.node}, SQLite ${m.sqlite} — ${date}`;
}

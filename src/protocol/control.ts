/** The daemon's control ops on the wire: their names (the types are the contract's, src/daemon-control.ts). */
import type { ControlOp, WriterCrashPoint } from "../daemon-control.js";

export type * from "../daemon-control.js";

export const WRITER_CRASH_POINTS: readonly WriterCrashPoint[] = ["now", "afterCommit"];

/** The control ops for the test suites, refused unless the daemon runs with SESSIONDB_FAULT_INJECTION=1. */
export const FAULT_OPS = ["faultCrashWriter", "faultCrashReader", "faultMaxPageCount"] as const satisfies readonly ControlOp[];

export const CONTROL_OPS = [
  "hello", "ping", "stats", "health", "shutdown", "backup", "check", "optimize", ...FAULT_OPS,
] as const satisfies readonly ControlOp[];

export function isControlOp(op: unknown): op is ControlOp {
  return typeof op === "string" && (CONTROL_OPS as readonly string[]).includes(op);
}

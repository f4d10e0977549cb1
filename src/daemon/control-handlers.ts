import { invalidArgument, SessionDBError } from "../errors.js";
import { SCHEMA_VERSION } from "../engine/schema.js";
import { WRITER_CRASH_POINTS, type ControlOp, type ControlResult, type DaemonStats, type HelloResult, type WriterCrashPoint } from "../protocol/control.js";
import { PROTOCOL_VERSION } from "../protocol/messages.js";
import { VERSION } from "../version.js";
import type { DaemonEngine, DaemonReaders, DaemonWriter } from "./daemon-engine.js";

/** What the control ops act on. */
export interface ControlContext {
  readonly database: string;
  readonly engine: DaemonEngine;
  readonly faultInjection: boolean;
  readonly writer: DaemonWriter;
  readonly readers: DaemonReaders;
  stats(): DaemonStats;
  close(): Promise<void>;
}

/** One handler per control op; the arguments arrive unchecked from the wire. */
export type ControlHandlers = { [K in ControlOp]: (args: unknown[]) => ControlResult<K> };

/** The daemon's control ops, as a table: the dispatch looks an op up here instead of switching. */
export function controlHandlers(ctx: ControlContext): ControlHandlers {
  const requireFaultInjection = (): void => {
    if (!ctx.faultInjection) {
      throw new SessionDBError("INVALID_ARGUMENT", "fault injection is off (start the daemon with SESSIONDB_FAULT_INJECTION=1)");
    }
  };
  return {
    hello: (args) => hello(args[0], ctx.database, ctx.engine),
    ping: () => "pong",
    stats: () => ctx.stats(),
    shutdown: () => {
      setImmediate(() => void ctx.close());
      return null;
    },
    faultCrashWriter: (args) => {
      requireFaultInjection();
      ctx.writer.crash(crashPoint(args[0]));
      return null;
    },
    faultCrashReader: (args) => {
      requireFaultInjection();
      ctx.readers.crashDuringNextReads(faultCount(args[0], 1));
      return null;
    },
    faultMaxPageCount: (args) => {
      requireFaultInjection();
      ctx.writer.maxPageCount(args[0] === null ? null : faultCount(args[0], null));
      return null;
    },
  };
}

/** The engine says which database it is and whether it serves it read-only (made by a newer sessiondb). */
function hello(opts: unknown, database: string, engine: DaemonEngine): HelloResult {
  // nil is the same as leaving the field out, as everywhere in the protocol.
  const wanted = (opts as { protocol?: unknown } | null | undefined)?.protocol ?? undefined;
  if (wanted !== undefined && wanted !== PROTOCOL_VERSION) {
    throw new SessionDBError("PROTOCOL", `unsupported protocol ${String(wanted)}; this daemon speaks protocol ${PROTOCOL_VERSION}`);
  }
  return {
    server: "sessiondb",
    version: VERSION,
    protocol: PROTOCOL_VERSION,
    schemaVersion: SCHEMA_VERSION,
    pid: process.pid,
    database,
    engine: engine.engine,
    readOnly: engine.readOnly,
    fileSchemaVersion: engine.fileSchemaVersion,
  };
}

/** The positive count a fault-injection op takes, or its default when it is left out. */
function faultCount(value: unknown, fallback: number | null): number {
  if (value === undefined && fallback !== null) return fallback;
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 1) throw invalidArgument("this fault-injection op takes a positive count");
  return value;
}

/** Where `faultCrashWriter` kills the writer: `now` when it is left out. */
function crashPoint(value: unknown): WriterCrashPoint {
  if (value === undefined) return "now";
  const point = WRITER_CRASH_POINTS.find((p) => p === value);
  if (point === undefined) throw invalidArgument(`faultCrashWriter takes one of ${WRITER_CRASH_POINTS.join(", ")}`);
  return point;
}

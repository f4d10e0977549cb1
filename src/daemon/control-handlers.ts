import { lstatSync } from "node:fs";
import { isAbsolute } from "node:path";
import { invalidArgument, SessionDBError } from "../errors.js";
import { SCHEMA_VERSION } from "../sqlite/schema.js";
import { WRITER_CRASH_POINTS, type ControlOp, type ControlResult, type DaemonStats, type HealthResult, type HelloResult, type WriterCrashPoint } from "../protocol/control.js";
import { PROTOCOL_VERSION } from "../protocol/messages.js";
import { VERSION } from "../version.js";
import type { DaemonEngine, DaemonMaintenance, DaemonReaders, DaemonWriter } from "./daemon-engine.js";

/** What the control ops act on. */
export interface ControlContext {
  readonly database: string;
  readonly engine: DaemonEngine;
  readonly faultInjection: boolean;
  readonly writer: DaemonWriter;
  readonly readers: DaemonReaders;
  stats(): DaemonStats;
  health(): HealthResult;
  /** Clients connected now, the one asking included. */
  clients(): number;
  close(): Promise<void>;
}

/**
 * One handler per control op; the arguments arrive unchecked from the wire. `deadline` (epoch ms)
 * is the request's, for the ops that take time.
 */
export type ControlHandlers = { [K in ControlOp]: (args: unknown[], deadline: number) => ControlResult<K> | Promise<ControlResult<K>> };

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
    health: () => ctx.health(),
    shutdown: () => {
      setImmediate(() => void ctx.close());
      return null;
    },
    backup: (args) => maintenance(ctx, "backup").backup(backupDestination(args[0])),
    check: (args, deadline) => maintenance(ctx, "check").check(flag(args[0], "quick"), deadline),
    optimize: (args) => {
      const vacuum = flag(args[0], "vacuum");
      const others = ctx.clients() - 1;
      if (vacuum && others > 0 && !flag(args[0], "force")) {
        throw new SessionDBError(
          "BUSY",
          `VACUUM refused: ${others} other client${others === 1 ? " is" : "s are"} connected, and VACUUM holds every write until it is done; run it when they are gone, or force it`,
        );
      }
      return maintenance(ctx, "optimize").optimize(vacuum);
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

/** The engine's upkeep, when it has one and may write the file. */
function maintenance(ctx: ControlContext, op: string): DaemonMaintenance {
  const { engine } = ctx;
  if (engine.maintenance === null) {
    throw invalidArgument(`${op} is for SQLite files: for PostgreSQL use its own tools (pg_dump for a backup, VACUUM, amcheck)`);
  }
  if (engine.readOnly && op !== "check") throw engine.readOnlyError(op);
  return engine.maintenance;
}

/** A boolean field of an options map; absent or nil is false. */
function flag(opts: unknown, name: string): boolean {
  if (opts === undefined || opts === null) return false;
  if (typeof opts !== "object") throw invalidArgument("expected an options map");
  const value = (opts as Record<string, unknown>)[name] ?? false;
  if (typeof value !== "boolean") throw invalidArgument(`${name} must be a boolean`);
  return value;
}

/**
 * Where `backup` writes: an empty regular file the client made (exclusively, with its mode), never
 * a link: the daemon fills only a file that is there for it.
 */
function backupDestination(dest: unknown): string {
  if (typeof dest !== "string" || !isAbsolute(dest)) throw invalidArgument("backup takes the absolute path of an empty file");
  let stat;
  try {
    stat = lstatSync(dest);
  } catch (err) {
    throw invalidArgument(`backup: ${dest}: ${(err as Error).message}`);
  }
  if (!stat.isFile() || stat.size !== 0) throw invalidArgument(`backup: ${dest} is not an empty regular file`);
  return dest;
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

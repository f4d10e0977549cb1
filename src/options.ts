import { invalidArgument } from "./errors.js";
import type { OpenOptions } from "./session-db.js";
import { DEFAULT_RETRY, type RetryPolicy } from "./operations/retry-policy.js";
import { checkRegularFile } from "./regular-file.js";
import { keyRetentionHours } from "./operations/idempotency-keys.js";
import { databaseFiles, type DatabaseFiles } from "./database-files.js";
import { defaultDatabasePath, locateDatabase, type Engine } from "./engine-kind.js";
import { defaultSpoolDir, SPOOL_MAX_BYTES } from "./spool/spool-file.js";

/** `OpenOptions` with every default applied and every value checked, once, where they enter. */
export interface ResolvedOptions {
  /** The file's real path; a PostgreSQL URL as given, password included (`files.db` leaves it out). */
  readonly path: string;
  /** Which engine `path` names, decided once, here. */
  readonly engine: Engine;
  /** The files beside the database, from its real path, resolved once. */
  readonly files: DatabaseFiles;
  /**
   * Whether a missing or empty (0-byte) file may be initialised. False: a missing database is
   * NOT_FOUND (nothing created), an empty one SCHEMA (left as it is).
   */
  readonly create: boolean;
  readonly mode: "auto" | "daemon" | "direct";
  readonly socketPath: string;
  /** No socket was given: a daemon may also be found by the file's identity (client/daemon-lookup.ts). */
  readonly findByIdentity: boolean;
  readonly busyTimeoutMs: number;
  readonly retry: RetryPolicy;
  readonly checkpointEveryNWrites: number;
  readonly requestTimeoutMs: number;
  readonly connectTimeoutMs: number;
  /** False also when `$SESSIONDB_AUTOSTART` says 0 or false, whatever the options said. */
  readonly autostart: boolean;
  /** What the options said (`autostart` is that, unless the environment turned it off). */
  readonly autostartAsked: boolean;
  /** The `serve --idle-exit` of a daemon autostart starts, in ms. */
  readonly autostartIdleExitMs: number;
  /** How long direct mode keeps a write's idempotency key, at least, in hours (issue 25). */
  readonly keyRetentionHours: number;
  /** Whether writes without a caller's key get one of the client's own, and are sent again when their fate is unknown. */
  readonly idempotencyKeys: boolean;
  /** The spool when it is on (null: off). */
  readonly spool: ResolvedSpool | null;
  /** The folder whose spool of this database direct mode replays on opening, spool on or not. */
  readonly spoolDir: string;
}

export interface ResolvedSpool {
  readonly dir: string;
  readonly maxBytes: number;
}

function resolveSpool(value: unknown): ResolvedSpool | null {
  if (value === undefined || value === false) return null;
  if (value === true) return { dir: defaultSpoolDir(), maxBytes: SPOOL_MAX_BYTES };
  const spool = value as Record<string, unknown> | null;
  if (typeof spool === "object" && spool !== null && !Array.isArray(spool) && Object.keys(spool).every((k) => k === "dir" || k === "maxBytes")) {
    const { dir, maxBytes } = spool;
    const dirOk = dir === undefined || (typeof dir === "string" && dir !== "");
    const maxOk = maxBytes === undefined || (typeof maxBytes === "number" && Number.isInteger(maxBytes) && maxBytes > 0);
    if (dirOk && maxOk) return { dir: (dir as string | undefined) ?? defaultSpoolDir(), maxBytes: (maxBytes as number | undefined) ?? SPOOL_MAX_BYTES };
  }
  throw invalidArgument(`option spool must be true, false or { dir?: a non-empty string, maxBytes?: a positive integer }, got ${JSON.stringify(value) ?? String(value)}`);
}

/** `SESSIONDB_AUTOSTART=0` (or `false`, `no`, `off`): no client starts a daemon, whatever its code asks. */
export function autostartDisabled(env: NodeJS.ProcessEnv = process.env): boolean {
  const value = env.SESSIONDB_AUTOSTART?.trim().toLowerCase();
  return value === "0" || value === "false" || value === "no" || value === "off";
}

/** How long an autostarted daemon lingers with no client, by default (a test suite's daemons must not pile up). */
export const AUTOSTART_IDLE_EXIT_MS = 30_000;

function nonNegative(value: unknown, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== "number" || !Number.isFinite(value) || value < 0) {
    throw invalidArgument(`option ${name} must be a non-negative number, got ${String(value)}`);
  }
  return value;
}

export function resolveOptions(options: OpenOptions = {}): ResolvedOptions {
  if (typeof options !== "object" || options === null) throw invalidArgument("options must be an object");
  const mode = options.mode ?? "auto";
  if (mode !== "auto" && mode !== "daemon" && mode !== "direct") {
    throw invalidArgument(`option mode must be "auto", "daemon" or "direct", got ${String(mode)}`);
  }
  if (options.path !== undefined && (typeof options.path !== "string" || options.path === "")) {
    throw invalidArgument("option path must be a non-empty string");
  }
  if (options.create !== undefined && typeof options.create !== "boolean") throw invalidArgument("option create must be a boolean");
  const location = locateDatabase(options.path ?? defaultDatabasePath());
  if (location.engine === "sqlite") checkRegularFile(location.path);
  const files = databaseFiles(location, options.socketPath);
  const retry: RetryPolicy = {
    budgetMs: nonNegative(options.retry?.budgetMs, "retry.budgetMs", DEFAULT_RETRY.budgetMs),
    maxAttempts: Math.max(1, Math.floor(nonNegative(options.retry?.maxAttempts, "retry.maxAttempts", DEFAULT_RETRY.maxAttempts))),
    minDelayMs: nonNegative(options.retry?.minDelayMs, "retry.minDelayMs", DEFAULT_RETRY.minDelayMs),
    maxDelayMs: nonNegative(options.retry?.maxDelayMs, "retry.maxDelayMs", DEFAULT_RETRY.maxDelayMs),
  };
  if (options.autostart !== undefined && typeof options.autostart !== "boolean") {
    throw invalidArgument(`option autostart must be a boolean, got ${String(options.autostart)}`);
  }
  const autostartIdleExitMs = nonNegative(options.autostartIdleExitMs, "autostartIdleExitMs", AUTOSTART_IDLE_EXIT_MS);
  if (autostartIdleExitMs === 0) throw invalidArgument("option autostartIdleExitMs must be a positive number, got 0");
  if (options.idempotencyKeys !== undefined && typeof options.idempotencyKeys !== "boolean") {
    throw invalidArgument(`option idempotencyKeys must be a boolean, got ${String(options.idempotencyKeys)}`);
  }
  const spool = resolveSpool(options.spool);
  if (retry.maxDelayMs < retry.minDelayMs) throw invalidArgument("option retry.maxDelayMs must be at least retry.minDelayMs");
  return {
    path: location.path,
    engine: location.engine,
    files,
    create: options.create ?? true,
    mode,
    socketPath: files.socket,
    findByIdentity: options.socketPath === undefined,
    busyTimeoutMs: nonNegative(options.busyTimeoutMs, "busyTimeoutMs", 1000),
    retry,
    checkpointEveryNWrites: Math.floor(nonNegative(options.checkpointEveryNWrites, "checkpointEveryNWrites", 50)),
    requestTimeoutMs: nonNegative(options.requestTimeoutMs, "requestTimeoutMs", 30_000),
    connectTimeoutMs: nonNegative(options.connectTimeoutMs, "connectTimeoutMs", 1000),
    autostart: (options.autostart ?? false) && !autostartDisabled(),
    autostartAsked: options.autostart ?? false,
    autostartIdleExitMs,
    keyRetentionHours: keyRetentionHours(options.keyRetentionHours, "keyRetentionHours"),
    idempotencyKeys: options.idempotencyKeys ?? true,
    spool,
    spoolDir: spool?.dir ?? defaultSpoolDir(),
  };
}

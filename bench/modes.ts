/**
 * The convoy modes, in one table: who writes, through what, how many clients. Every run of the
 * matrix and every line of the report derives from it.
 */
import { postgresBinDir } from "../test/helpers/postgres-server.js";
import { pythonClientMissing, pythonWorker, pythonVersion, workerScript } from "./paths.js";

export const CONVOY_MODES = [
  "busy", "jitter", "python-jitter", "python-daemon", "daemon", "daemon-keyless", "daemon-ping", "daemon-pipelined", "ceiling",
  "pg-direct", "pg-daemon", "pg-daemon-2",
] as const;
export type ConvoyMode = (typeof CONVOY_MODES)[number];

export interface ModeSpec {
  readonly label: string;
  /** "k": K client processes; "one": a single process whatever K. */
  readonly clients: "k" | "one";
  /** Needs a `sessiondb serve` process on the run's file. */
  readonly daemon: boolean;
  readonly runtime: "node" | "python";
  /** Script: a compiled Node worker or the Python writer. */
  readonly script: () => string;
  /** What each call does: append a message, or `ping` the daemon (the round trip alone). */
  readonly operation: "append" | "ping";
  /** Appends each client keeps in flight. */
  readonly inFlight: number;
  /** The daemon client gives each write an idempotency key (its default); false: none (the cost of keys, issue 25). */
  readonly keys?: false;
  /** Appends per transaction. */
  readonly batch: number;
  /** Whether the mode's clients count application retries. */
  readonly countsRetries: boolean;
  /** Why this mode cannot run here, or null. */
  readonly unavailable: () => string | null;
  /** The database: a fresh SQLite file (default), or a fresh database on the bench's PostgreSQL server. */
  readonly engine?: "postgres";
  /** Daemons on the one database, each as on its own host, clients spread over them. Default 1. */
  readonly hosts?: 2;
}

const always = () => null;

function postgresMissing(): string | null {
  try {
    postgresBinDir();
    return null;
  } catch (err) {
    return (err as Error).message;
  }
}

export const MODES = {
  busy: {
    label: "better-sqlite3, busy_timeout 5 s only",
    clients: "k", daemon: false, runtime: "node", script: () => workerScript("busy"), operation: "append",
    inFlight: 1, batch: 1, countsRetries: false, unavailable: always,
  },
  jitter: {
    label: "sessiondb direct mode (jittered retry)",
    clients: "k", daemon: false, runtime: "node", script: () => workerScript("jitter"), operation: "append",
    inFlight: 1, batch: 1, countsRetries: true, unavailable: always,
  },
  "python-jitter": {
    label: "Python sqlite3, the reference's jittered retry",
    clients: "k", daemon: false, runtime: "python", script: () => pythonWorker("python-jitter"), operation: "append",
    inFlight: 1, batch: 1, countsRetries: true,
    unavailable: () => (pythonVersion() === null ? "python3 is not installed" : null),
  },
  "python-daemon": {
    label: "Python, the sessiondb client through the daemon",
    clients: "k", daemon: true, runtime: "python", script: () => pythonWorker("python-daemon"), operation: "append",
    inFlight: 1, batch: 1, countsRetries: false, unavailable: pythonClientMissing,
  },
  daemon: {
    label: "sessiondb clients through the daemon",
    clients: "k", daemon: true, runtime: "node", script: () => workerScript("daemon"), operation: "append",
    inFlight: 1, batch: 1, countsRetries: false, unavailable: always,
  },
  "daemon-keyless": {
    label: "sessiondb clients through the daemon, writes without idempotency keys",
    clients: "k", daemon: true, runtime: "node", script: () => workerScript("daemon"), operation: "append",
    inFlight: 1, batch: 1, countsRetries: false, unavailable: always, keys: false,
  },
  "daemon-ping": {
    label: "sessiondb clients pinging the daemon: the round trip with no database work",
    clients: "k", daemon: true, runtime: "node", script: () => workerScript("daemon"), operation: "ping",
    inFlight: 1, batch: 1, countsRetries: false, unavailable: always,
  },
  "daemon-pipelined": {
    label: "one daemon client, 64 appends in flight",
    clients: "one", daemon: true, runtime: "node", script: () => workerScript("daemon"), operation: "append",
    inFlight: 64, batch: 1, countsRetries: false, unavailable: always,
  },
  ceiling: {
    label: "one process, 100 appends per transaction",
    clients: "one", daemon: false, runtime: "node", script: () => workerScript("ceiling"), operation: "append",
    inFlight: 1, batch: 100, countsRetries: false, unavailable: always,
  },
  "pg-direct": {
    label: "sessiondb direct mode on PostgreSQL (a small pool per process)",
    clients: "k", daemon: false, runtime: "node", script: () => workerScript("jitter"), operation: "append",
    inFlight: 1, batch: 1, countsRetries: false, unavailable: postgresMissing, engine: "postgres",
  },
  "pg-daemon": {
    label: "sessiondb clients through one daemon on PostgreSQL",
    clients: "k", daemon: true, runtime: "node", script: () => workerScript("daemon"), operation: "append",
    inFlight: 1, batch: 1, countsRetries: false, unavailable: postgresMissing, engine: "postgres",
  },
  "pg-daemon-2": {
    label: "sessiondb clients through two daemons (two hosts) on one PostgreSQL database",
    clients: "k", daemon: true, runtime: "node", script: () => workerScript("daemon"), operation: "append",
    inFlight: 1, batch: 1, countsRetries: false, unavailable: postgresMissing, engine: "postgres", hosts: 2,
  },
} as const satisfies Record<ConvoyMode, ModeSpec>;

export function isConvoyMode(name: string): name is ConvoyMode {
  return (CONVOY_MODES as readonly string[]).includes(name);
}

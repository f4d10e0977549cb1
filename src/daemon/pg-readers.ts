import { setTimeout as sleep } from "node:timers/promises";
import { SessionDBError } from "../errors.js";
import type { EngineOpName } from "../operation-catalogue.js";
import type { ReaderStats } from "../protocol/control.js";
import type { DaemonReaders } from "./daemon-engine.js";
import type { ReadRequester } from "./reader-pool.js";
import type { PgPool } from "../pg/pg-connection.js";
import { isConnectionError, toPgSessionDBError } from "../pg/pg-errors.js";
import { runPgOperation } from "../pg/pg-operations.js";
import { reconnectDelayMs } from "../pg/pg-backoff.js";

/** The daemon's readers on PostgreSQL: a pool of connections of their own, beside the writer's. */
export class PgReaders implements DaemonReaders {
  readonly #pool: PgPool;
  readonly #size: number;
  #inFlight = 0;
  #completed = 0;
  #busySince = performance.now();
  #busyMs = 0;

  constructor(pool: PgPool, size: number) {
    this.#pool = pool;
    this.#size = size;
  }

  /** PostgreSQL's rows are read on this thread: the reply encodes them as any other result. */
  reply(op: EngineOpName, params: unknown, deadline: number, requester: ReadRequester): Promise<unknown> {
    return this.run(op, params, deadline, undefined, requester);
  }

  async run(op: EngineOpName, params: unknown, deadline: number, cursor?: unknown, requester?: ReadRequester): Promise<unknown> {
    // A read whose client has gone, or whose deadline has passed, is not started.
    if (gone(requester)) throw new SessionDBError("CLOSED", "the client went away before this read started");
    if (Date.now() >= deadline) throw new SessionDBError("TIMEOUT", `${op} was not started before its deadline`);
    this.#inFlight++;
    const started = performance.now();
    try {
      for (let failures = 1; ; failures++) {
        try {
          return await runPgOperation(this.#pool, op, params, cursor ?? null);
        } catch (err) {
          // A read changes nothing: one whose connection the server dropped (a restart,
          // pg_terminate_backend) runs again on a new connection, as the writer reconnects, until
          // its deadline; then it fails UNAVAILABLE.
          const wait = deadline - Date.now();
          if (!isConnectionError(err) || wait <= 0 || gone(requester)) throw err;
          if (failures > 1) await sleep(Math.min(reconnectDelayMs(failures - 1), wait));
        }
      }
    } catch (err) {
      throw toPgSessionDBError(err);
    } finally {
      this.#inFlight--;
      this.#completed++;
      this.#busyMs += performance.now() - started;
    }
  }

  crashDuringNextReads(): void {
    throw new SessionDBError("INVALID_ARGUMENT", "faultCrashReader kills reader threads; this daemon serves PostgreSQL with reader connections");
  }

  stats(): ReaderStats {
    const elapsed = performance.now() - this.#busySince;
    return {
      threads: this.#size,
      live: this.#pool.totalCount,
      utilization: elapsed <= 0 ? 0 : Math.min(1, this.#busyMs / (elapsed * this.#size)),
      queued: this.#pool.waitingCount,
      inFlight: this.#inFlight,
      completed: this.#completed,
      paused: false,
    };
  }

  close(): Promise<void> {
    return this.#pool.end();
  }
}

function gone(requester: ReadRequester | undefined): boolean {
  return requester?.gone.aborted === true;
}

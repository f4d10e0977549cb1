import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { isBusyError, SessionDBError, toSessionDBError } from "../errors.js";
import type { ResolvedOptions } from "../options.js";
import type { ExportOptions, SessionDB, SessionExport } from "../session-db.js";
import { openConnection, type Connection } from "../engine/connection.js";
import type { Args } from "../engine/args.js";
import { parseOperation, runOperation, runPage } from "../engine/operations.js";
import type { OpName } from "../operation-catalogue.js";
import { ensureSchema } from "../engine/schema.js";
import { busyFailure, inWriteTransaction, jitterMs, retryBusySync } from "../engine/transaction.js";
import { installOperationMethods, type OperationMethods } from "../operation-methods.js";
import { parseCall, WriteQueue } from "./write-queue.js";


/**
 * Direct mode (SPEC §4): the file opened in this process. Every write is `BEGIN IMMEDIATE …
 * COMMIT`; a busy database is retried after a random 20–150 ms pause, up to 15 attempts, then
 * fails with BUSY. Writes from one handle keep their order; reads run at once.
 */
export class DirectStore implements SessionDB {
  readonly mode = "direct" as const;
  readonly engine = "sqlite" as const;
  readonly #options: ResolvedOptions;
  #db: Connection | null;
  #writesSinceCheckpoint = 0;
  readonly #writes = new WriteQueue();
  #closed: Promise<void> | null = null;

  private constructor(db: Connection, options: ResolvedOptions) {
    this.#db = db;
    this.#options = options;
  }

  /** Opens (creating when missing) and migrates the file. */
  static open(options: ResolvedOptions): DirectStore {
    mkdirSync(dirname(options.path), { recursive: true });
    let db: Connection | undefined;
    try {
      // Switching a file to WAL needs an exclusive lock that SQLite refuses at once (no busy wait)
      // while another process is switching or migrating it too, so opening retries like a write.
      db = retryBusySync(options.retry, () => openConnection(options.path, { busyTimeoutMs: options.busyTimeoutMs }));
      ensureSchema(db, options.retry);
      return new DirectStore(db, options);
    } catch (err) {
      db?.close();
      throw toSessionDBError(err);
    }
  }

  /** Runs one operation of the table by name; the typed methods all come through here. */
  async call(name: OpName, args: Args): Promise<unknown> {
    const db = this.#connection();
    const { kind, params } = parseCall(name, args);
    if (kind === "read") return this.#withRetry(() => runOperation(db, name, params), false);
    return this.#writes.run(() => this.#withRetry(() => runOperation(db, name, params), true));
  }

  async *exportAll(opts?: ExportOptions): AsyncIterable<SessionExport> {
    const params = parseOperation("exportAll", [opts]);
    let cursor: unknown = null;
    do {
      const db = this.#connection();
      const page = await this.#withRetry(() => runPage(db, "exportAll", params, cursor), false);
      yield* page.items as SessionExport[];
      cursor = page.next;
    } while (cursor !== null);
  }

  close(): Promise<void> {
    this.#closed ??= this.#writes.idle().then(() => {
      const db = this.#db;
      this.#db = null;
      if (db === null) return;
      checkpoint(db);
      db.close();
    });
    return this.#closed;
  }

  #connection(): Connection {
    if (this.#db === null || this.#closed !== null) throw new SessionDBError("CLOSED", "this SessionDB handle is closed");
    return this.#db;
  }

  /** One attempt per turn of the event loop: other work goes on while a writer waits for its turn. */
  async #withRetry<T>(fn: () => T, isWrite: boolean): Promise<T> {
    const { retry } = this.#options;
    for (let attempt = 1; ; attempt++) {
      const db = this.#db;
      if (db === null) throw new SessionDBError("CLOSED", "this SessionDB handle is closed");
      try {
        const result = isWrite ? inWriteTransaction(db, fn) : fn();
        if (isWrite) this.#afterWrite(db);
        return result;
      } catch (err) {
        if (!isBusyError(err)) throw toSessionDBError(err);
        if (attempt >= retry.maxAttempts) throw busyFailure(attempt, err);
        await sleep(jitterMs(retry));
      }
    }
  }

  #afterWrite(db: Connection): void {
    const every = this.#options.checkpointEveryNWrites;
    if (every > 0 && ++this.#writesSinceCheckpoint >= every) {
      this.#writesSinceCheckpoint = 0;
      checkpoint(db);
    }
  }
}

/** Best effort: a PASSIVE checkpoint never waits and never fails a caller. */
function checkpoint(db: Connection): void {
  try {
    db.pragma("wal_checkpoint(PASSIVE)");
  } catch {
    // Another connection may hold what it needs; the next checkpoint catches up.
  }
}

export interface DirectStore extends OperationMethods {}

installOperationMethods(DirectStore);

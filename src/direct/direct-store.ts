import { dirname } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { isBusyError, SessionDBError, toSessionDBError } from "../errors.js";
import type { ResolvedOptions } from "../options.js";
import type { ExportOptions, SessionDB, SessionExport } from "../session-db.js";
import type { Connection } from "../engine/connection.js";
import { newerSchemaError } from "../engine/database-file.js";
import { openDatabase } from "../engine/open-database.js";
import { makePrivateDir } from "../engine/private-files.js";
import type { Args } from "../engine/args.js";
import { operations, type OpName } from "../engine/operations.js";
import { busyFailure, inWriteTransaction, retryDelayMs } from "../engine/transaction.js";
import type { ExportCursor } from "../engine/export.js";
import { installOperationMethods, type OperationMethods } from "../operation-methods.js";


/**
 * Direct mode (SPEC §4): the file opened in this process. Every write is `BEGIN IMMEDIATE …
 * COMMIT`; a busy database is retried after a random 20–150 ms pause (growing after 2 s) until
 * the retry budget (default 20 s) is spent, then fails with BUSY. Writes from one handle keep their order; reads run at once.
 */
export class DirectStore implements SessionDB {
  readonly mode = "direct" as const;
  readonly #options: ResolvedOptions;
  #db: Connection | null;
  /** The file's schema version when a newer Hermes made it: then every write fails with SCHEMA. */
  readonly #newerVersion: number | null;
  #writesSinceCheckpoint = 0;
  #writeQueue: Promise<unknown> = Promise.resolve();
  #closed: Promise<void> | null = null;

  private constructor(db: Connection, options: ResolvedOptions, newerVersion: number | null) {
    this.#db = db;
    this.#options = options;
    this.#newerVersion = newerVersion;
  }

  /** Opens (creating when missing, unless `create` is false) and migrates the file. */
  static open(options: ResolvedOptions): DirectStore {
    try {
      if (options.create) makePrivateDir(dirname(options.path));
      const { db, newerVersion } = openDatabase(options.path, {
        busyTimeoutMs: options.busyTimeoutMs,
        retry: options.retry,
        create: options.create,
      });
      return new DirectStore(db, options, newerVersion);
    } catch (err) {
      throw toSessionDBError(err);
    }
  }

  /** Runs one operation of the table by name; the typed methods all come through here. */
  async call(name: OpName, args: Args): Promise<unknown> {
    const db = this.#connection();
    const op = operations[name];
    if (op.kind === "stream") throw new SessionDBError("INVALID_ARGUMENT", `${name} is streamed: iterate it instead`);
    const params = op.parse(args);
    if (op.kind === "write" && this.#newerVersion !== null) throw newerSchemaError(this.#options.path, this.#newerVersion, name);
    if (op.kind === "read") return this.#withRetry(() => op.run(db, params as never), false);
    const result = this.#writeQueue.then(() => this.#withRetry(() => op.run(db, params as never), true));
    this.#writeQueue = result.catch(() => undefined);
    return result;
  }

  async *exportAll(opts?: ExportOptions): AsyncIterable<SessionExport> {
    const op = operations.exportAll;
    const params = op.parse([opts]);
    let cursor: ExportCursor | null = null;
    do {
      const db = this.#connection();
      const page = await this.#withRetry(() => op.page(db, params, cursor), false);
      yield* page.items;
      cursor = page.next;
    } while (cursor !== null);
  }

  close(): Promise<void> {
    this.#closed ??= this.#writeQueue.then(() => {
      const db = this.#db;
      this.#db = null;
      if (db === null) return;
      if (this.#newerVersion === null) checkpoint(db);
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
    const startedAt = performance.now();
    for (let attempt = 1; ; attempt++) {
      const db = this.#db;
      if (db === null) throw new SessionDBError("CLOSED", "this SessionDB handle is closed");
      try {
        const result = isWrite ? inWriteTransaction(db, fn) : fn();
        if (isWrite) this.#afterWrite(db);
        return result;
      } catch (err) {
        if (!isBusyError(err)) throw toSessionDBError(err);
        const delay = retryDelayMs(retry, attempt, startedAt);
        if (delay === null) throw busyFailure(attempt, startedAt, err);
        await sleep(delay);
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

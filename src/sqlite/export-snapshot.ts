/**
 * One read snapshot for a whole `exportAll` (issue 23 item 3): a read-only connection of its own
 * whose read transaction stays open from the first page to the last, so every page (each
 * session's counters and its messages, and which sessions there are) is read as of the moment the
 * export began, however long the consumer takes. Pages keep memory bounded; the snapshot is what
 * costs: while it is open no checkpoint can reset the WAL past it, so the WAL grows by every
 * write made meanwhile. Its owner bounds that (`walGrowth`, `end`).
 */
import { statSync } from "node:fs";
import { SessionDBError, toSessionDBError } from "../errors.js";
import type { EngineOpName } from "../operation-catalogue.js";
import { openConnection, sql, type Connection } from "./connection.js";
import type { Page } from "./define-operation.js";
import { runPage } from "./operations.js";
import { DEFAULT_RETRY, retryBusySync } from "./transaction.js";

/** How much an export's snapshot may let the WAL grow before it is ended, when not told: the daemon's default WAL limit. */
export const EXPORT_WAL_GROWTH_LIMIT = 64 * 1024 * 1024;

export class ExportSnapshot {
  readonly #db: Connection;
  readonly #wal: string;
  readonly #walAtStart: number;
  #ended: SessionDBError | null = null;

  private constructor(db: Connection, wal: string) {
    this.#db = db;
    this.#wal = wal;
    this.#walAtStart = sizeOf(wal);
  }

  /** Opens the connection and takes the snapshot now: the export "begins" when this returns. */
  static open(path: string, busyTimeoutMs: number): ExportSnapshot {
    const db = openConnection(path, { readonly: true, busyTimeoutMs });
    try {
      retryBusySync(DEFAULT_RETRY, () => {
        db.exec("BEGIN");
        try {
          // A deferred transaction takes its snapshot at its first read.
          sql(db, "SELECT count(*) FROM sessions").get();
        } catch (err) {
          if (db.inTransaction) db.exec("ROLLBACK");
          throw err;
        }
      });
      return new ExportSnapshot(db, `${path}-wal`);
    } catch (err) {
      db.close();
      throw toSessionDBError(err);
    }
  }

  /** The page of `op` that starts at `cursor`, as of the snapshot. */
  page(op: EngineOpName, params: unknown, cursor: unknown): Page<unknown, unknown> {
    if (this.#ended !== null) throw this.#ended;
    try {
      return runPage(this.#db, op, params, cursor);
    } catch (err) {
      throw toSessionDBError(err);
    }
  }

  /** How many bytes the WAL has grown since the snapshot was taken (0 if it shrank). */
  walGrowth(): number {
    return Math.max(0, sizeOf(this.#wal) - this.#walAtStart);
  }

  /** Ends the snapshot early (the WAL may be checkpointed past it): later pages fail with `reason`. */
  end(reason: SessionDBError): void {
    this.#ended ??= reason;
    this.close();
  }

  /** Ends the read transaction and closes the connection. Idempotent. */
  close(): void {
    if (!this.#db.open) return;
    try {
      if (this.#db.inTransaction) this.#db.exec("COMMIT");
    } finally {
      this.#db.close();
    }
  }
}

/** The error of an export ended because its snapshot held the WAL back too long. */
export function walHeldError(what: string, limitBytes: number): SessionDBError {
  return new SessionDBError(
    "TIMEOUT",
    `exportAll was ended: its snapshot held back checkpoints while ${what} (the limit is ${(limitBytes / 1048576).toFixed(1)} MiB); the sessions already received are all it exported; retry when fewer writes are going on, or consume the export faster`,
  );
}

function sizeOf(path: string): number {
  return statSync(path, { throwIfNoEntry: false })?.size ?? 0;
}

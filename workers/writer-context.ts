import type { Connection, Statement } from "../src/sqlite/connection.js";
import type { FromWriter, WriterConfig } from "../src/daemon/writer-messages.js";

/** Transaction control, prepared once: these run once per batch, and per request when one fails. */
export interface TransactionStatements {
  begin: Statement;
  commit: Statement;
  rollback: Statement;
  savepoint: Statement;
  release: Statement;
  rollbackTo: Statement;
}

export function prepareTransactionStatements(conn: Connection): TransactionStatements {
  return {
    begin: conn.prepare("BEGIN IMMEDIATE"),
    commit: conn.prepare("COMMIT"),
    rollback: conn.prepare("ROLLBACK"),
    savepoint: conn.prepare("SAVEPOINT request"),
    release: conn.prepare("RELEASE request"),
    rollbackTo: conn.prepare("ROLLBACK TO request"),
  };
}

/** What the parts of the writer thread share: its configuration, its one connection, the way to the daemon. */
export interface WriterContext {
  readonly config: WriterConfig;
  readonly conn: Connection;
  /**
   * The file's schema version when a newer Hermes made it: the connection is read-only, nothing is
   * written (no checkpoint either) and any write that still reaches the thread fails with SCHEMA.
   */
  readonly newerVersion: number | null;
  /** Null on such a newer file: nothing there begins a transaction. */
  readonly tx: TransactionStatements | null;
  readonly post: (message: FromWriter) => void;
}

/** What `openSessionDB` takes: which database, which mode, and each mode's patience. */
export interface OpenOptions {
  /**
   * The database file, or a PostgreSQL database as a `postgres://` / `postgresql://` URL.
   * Default: `$SESSIONDB_PATH`, else `$HERMES_HOME/state.db`, else `~/.hermes/state.db`.
   */
  path?: string;
  /** Default "auto": the daemon when one answers for this file, else direct. */
  mode?: "auto" | "daemon" | "direct";
  /** Default: derived from the database path. */
  socketPath?: string;
  /** Direct mode's SQLite busy timeout. Default 1000. */
  busyTimeoutMs?: number;
  /** Direct mode's write retry. Default: a 20 s budget, 20–150 ms pauses growing after 2 s. */
  retry?: RetryOptions;
  /** Direct mode's PASSIVE checkpoint cadence. Default 50. */
  checkpointEveryNWrites?: number;
  /**
   * Daemon mode: how long a request may take, in ms. Default 30000. The daemon does not start a
   * request past it (`TIMEOUT`: not applied); a write sent and not answered by then (plus 2 s)
   * fails with `OUTCOME_UNKNOWN`. Direct mode on PostgreSQL: how long a keyed write is sent
   * again after a lost connection.
   */
  requestTimeoutMs?: number;
  /** Daemon mode: how long to wait for the socket to answer. Default 1000. */
  connectTimeoutMs?: number;
  /**
   * Modes "daemon" and "auto": when no daemon answers, start one (`sessiondb serve --idle-exit
   * 30`, found through `$SESSIONDB_BIN`, else this package's CLI) and wait up to 5 s for it.
   * Default false: "auto" falls back to direct mode instead. `SESSIONDB_AUTOSTART=0` (or `false`)
   * in the environment turns it off whatever this says (test suites, CI).
   */
  autostart?: boolean;
  /**
   * How long a daemon this handle autostarts lingers once no client is connected, in ms (its
   * `serve --idle-exit`; it checkpoints and exits). Default 30000. A daemon already running keeps
   * its own.
   */
  autostartIdleExitMs?: number;
  /**
   * Whether a missing or empty (0-byte) file may be initialised. Default true. With false a
   * missing database is `NOT_FOUND` (nothing is created, nor its directory) and an empty one
   * `SCHEMA` (left as it is), in every mode that would open the file.
   */
  create?: boolean;
  /**
   * Direct mode: how long a write's idempotency key is remembered, at least, in hours (a daemon
   * has its own, `serve --key-retention-hours`). Default 24. Older keys are deleted by the
   * writer, a few hundred at a time.
   */
  keyRetentionHours?: number;
  /**
   * Modes "daemon" and "auto", and direct mode on PostgreSQL: give every write whose caller gave
   * no `idempotencyKey` one of the client's own, and send it again, until its deadline, after a
   * lost connection (to the daemon or to PostgreSQL), a daemon restart, `OUTCOME_UNKNOWN` from
   * the daemon or a fail-over to direct mode: applied exactly once. Default true. With false,
   * such a write is sent once (its fate may stay unknown).
   */
  idempotencyKeys?: boolean;
  /**
   * The durable spool (docs/spool.md), every mode: a write that cannot be applied before its
   * deadline because the store cannot be reached or stays locked (`UNAVAILABLE`, `BUSY`,
   * `TIMEOUT`, `OVERLOADED`, `OUTCOME_UNKNOWN`) is appended with its idempotency key to a file of
   * this user's (fsync'd before the call returns) and the call rejects with `SPOOLED`
   * (`SpooledError`): it will be applied exactly once, in this handle's order: its later writes
   * replay the spool first. `true`: the default folder (`$XDG_STATE_HOME/sessiondb/spool`, else
   * `~/.local/state/sessiondb/spool`) and bound (64 MiB). Default false. Direct mode replays what
   * the folder holds for the database on opening, spool on or not.
   */
  spool?: boolean | SpoolOptions;
}

/** Where the spool is, and how large it may grow. */
export interface SpoolOptions {
  /** The folder (made 0700). Default `$XDG_STATE_HOME/sessiondb/spool`, else `~/.local/state/sessiondb/spool`. */
  dir?: string;
  /** The most one database's spool file may hold, in bytes; a write that would pass it is not spooled. Default 64 MiB. */
  maxBytes?: number;
}

/** Direct mode's patience for the write lock (SPEC §4). */
export interface RetryOptions {
  /** How long a write keeps trying for the lock before it fails with BUSY, in ms. Default 20000. */
  budgetMs?: number;
  /** An optional cap on the attempts within the budget. Default: none. */
  maxAttempts?: number;
  /** The random pause between attempts: 20–150 ms by default, its range growing after 2 s of waiting. */
  minDelayMs?: number;
  maxDelayMs?: number;
}

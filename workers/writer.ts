/**
 * The writer thread: the daemon's only write connection, and its group-commit loop.
 *
 * Everything queued (up to `maxBatch` requests, for at most `maxBatchMs`) runs in one
 * `BEGIN IMMEDIATE` transaction with a savepoint per request: a failing request rolls back alone
 * and gets its own error. Outcomes go back to the main thread only after COMMIT, so an
 * acknowledged write is durable. When another process holds the lock, the writer waits with a
 * jittered retry and never fails a queued request for it; requests whose deadline passes before
 * they start are answered TIMEOUT and never applied.
 */
import { parentPort, workerData } from "node:worker_threads";
import { SessionDBError, isBusyError, toSessionDBError, toWireError } from "../src/errors.js";
import type { Connection, Statement } from "../src/engine/connection.js";
import { catchUpCjkIndex, createCjkIndex, hasCjkIndex, sweepCjkIndex } from "../src/engine/cjk-index.js";
import { newerSchemaError } from "../src/engine/database-file.js";
import { openDatabase } from "../src/engine/open-database.js";
import { runOperation } from "../src/engine/operations.js";
import { stillServed } from "../src/file-identity.js";
import { WalFiles, type WalLoss } from "../src/daemon/wal-files.js";
import { inWriteTransaction, jitterMs, retryBusySync, type RetryPolicy } from "../src/engine/transaction.js";
import { deletesMessages } from "../src/operation-catalogue.js";
import { ftsMergeStep, MergePace, MERGED_INDEXES } from "../src/engine/fts-merge.js";
import { snapshotCounts } from "../src/engine/integrity-check.js";
import { tableExists } from "../src/engine/schema.js";
import type {
  BackupOutcome,
  CheckpointResult,
  MaintenanceTask,
  MergeOutcome,
  FromWriter,
  ToWriter,
  WriteJob,
  WriteOutcome,
  WriterConfig,
} from "../src/daemon/writer-messages.js";

const config = workerData as WriterConfig;
const port = parentPort!;
/** The writer's own wait: short SQLite busy waits, retried without limit (never fails a request). */
const LOCK_RETRY: RetryPolicy = { budgetMs: Infinity, maxAttempts: Infinity, minDelayMs: 1, maxDelayMs: 10 };
/** Opening and migrating the file wait for other processes too, but not forever. */
const OPEN_RETRY: RetryPolicy = { ...LOCK_RETRY, maxAttempts: 1000 };
const LOCK_BUSY_TIMEOUT_MS = 100;
const sleeper = new Int32Array(new SharedArrayBuffer(4));
/** [first, last] seq of the batch being committed and not yet answered; [0, 0] otherwise. */
const committing = new Float64Array(config.committing);

const queue: WriteJob[] = [];
let pendingCheckpoint: ToWriter & { type: "checkpoint" } | null = null;
let closing = false;
let scheduled = false;
let idleTimer: NodeJS.Timeout | null = null;
/** When the current run of back-to-back transactions began (null while idle). */
let busySince: number | null = null;
/**
 * Set when a write failed with an I/O error (a full disk): until a TRUNCATE checkpoint succeeds,
 * one runs before each batch, so the WAL's space goes back to the disk as soon as there is room
 * to copy it into the database.
 */
let reclaimWal = false;
/** Set once a commit found the path naming another file: nothing more is applied to the old one. */
let fileReplaced = false;
/** The writer's own descriptors on the `-wal` and `-shm`, checked before each COMMIT (null: not watched). */
let walFiles: WalFiles | null = null;
/** Set once the `-wal` or `-shm` was found removed or truncated: nothing more is written. */
let walLost: WalLoss | null = null;
/** Set by the daemon while it makes room for a TRUNCATE checkpoint: writes wait in the queue. */
let held = false;
/** Fault injection: the thread dies right after its next COMMIT, before answering that batch. */
let crashAfterCommit = false;
/** The file has the CJK index (this SQLite could make it, and the file is ours to write). */
let cjkIndexed = false;
/** True while the CJK index has messages left to catch up on, or stale entries to sweep. */
let cjkBehind = false;
/** True from the start and after messages were deleted, until a sweep has gone once round. */
let cjkSweep = false;
/** Messages indexed per idle catch-up transaction. */
const CJK_IDLE_ROWS = 5000;
/**
 * The CJK catch-up rides in a group commit once this many requests have been committed since the
 * last one, or this long has passed, not in every commit: its fixed cost (the index's state, its
 * mark's page in the WAL) was a sixth of a lone append's time in the writer. Searches stay exact
 * meanwhile: they scan the messages above the mark. What is left when the writer goes idle is
 * caught up after `idleCheckpointMs` of quiet, before the checkpoint.
 */
const CJK_CATCH_UP_REQUESTS = 128;
const CJK_CATCH_UP_MS = 250;
/** Requests committed since the CJK index last caught up, and when that was. */
let uncaughtRequests = 0;
let cjkCaughtUpAt = 0;

/** Pages a backup copies per step, between batches: a millisecond or two of the writer's time. */
const BACKUP_STEP_PAGES = 256;
/** What a merge step aims to take (MergePace): the lock is never held much longer. */
const MERGE_STEP_MS = 5;
/** Maintenance asked for and not started yet: one task runs at a time. */
const maintenanceQueue: Array<{ id: number; task: MaintenanceTask }> = [];
/** The index merge under way, done one step per turn of the loop. */
let merging: { id: number; indexes: string[]; at: number; pace: MergePace; steps: number; maxStepMs: number } | null = null;
/** Set from a merge step to the next batch: writes and merge steps take turns, neither starves. */
let mergeTurn = false;
/** True while a backup runs: its steps are turns of the event loop of their own, between batches. */
let backingUp = false;

function post(message: FromWriter): void {
  port.postMessage(message);
}

function pause(ms: number): void {
  if (ms > 0) Atomics.wait(sleeper, 0, 0, ms);
}

function maintained(id: number, outcome: { ok: true; result: unknown } | { ok: false; error: unknown }): void {
  post({ type: "maintained", id, outcome: outcome.ok ? outcome : { ok: false, error: toWireError(outcome.error) } });
}

function maintenanceBusy(): boolean {
  return backingUp || merging !== null;
}

function startMaintenance(conn: Connection): void {
  const next = maintenanceQueue.shift()!;
  // Nothing more is written (or copied) once the WAL is not ours.
  if (walLost !== null || fileReplaced || !walStillOurs(conn, false)) {
    maintained(next.id, { ok: false, error: notOursError() });
    return;
  }
  switch (next.task.kind) {
    case "backup":
      startBackup(conn, next.id, next.task.dest);
      break;
    case "mergeIndexes":
      merging = { id: next.id, indexes: MERGED_INDEXES.filter((t) => tableExists(conn, t)), at: 0, pace: new MergePace(MERGE_STEP_MS), steps: 0, maxStepMs: 0 };
      break;
    case "vacuum":
      // The whole file rewritten in one statement: the writes wait (why the CLI asks for --force
      // while other clients are connected).
      try {
        retryBusySync(OPEN_RETRY, () => conn.exec("VACUUM"));
        maintained(next.id, { ok: true, result: null });
      } catch (err) {
        maintained(next.id, { ok: false, error: err });
      }
      break;
  }
}

/**
 * The backup runs on this connection, so the writes made on it between steps go to the copy too
 * (SQLite's backup API updates the destination when its own connection writes the source): it
 * never restarts, no read transaction spans it (the WAL stays under its bound), and when the last
 * step is done the copy is the file as this connection sees it. The counts are read in the same
 * turn, before any batch can run: the copy's must match them.
 */
function startBackup(conn: Connection, id: number, dest: string): void {
  backingUp = true;
  conn
    .backup(dest, {
      progress: () => {
        if (closing) throw new SessionDBError("CLOSED", "the daemon is shutting down: the backup was stopped");
        return BACKUP_STEP_PAGES;
      },
    })
    .then((done): BackupOutcome => ({ pages: done.totalPages, ...snapshotCounts(conn) }))
    .then(
      (result) => maintained(id, { ok: true, result }),
      (err: unknown) => maintained(id, { ok: false, error: err }),
    )
    .finally(() => {
      backingUp = false;
      schedule();
    });
}

/** One step of the index merge, in a transaction of its own; another process holding the lock means the next turn. */
function mergeStep(conn: Connection): void {
  const m = merging!;
  const table = m.indexes[m.at];
  if (table === undefined) {
    merging = null;
    const result: MergeOutcome = { indexes: m.indexes, steps: m.steps, maxStepMs: m.maxStepMs };
    maintained(m.id, { ok: true, result });
    return;
  }
  const start = performance.now();
  try {
    tx.begin.run();
  } catch (err) {
    if (isBusyError(err)) return;
    merging = null;
    maintained(m.id, { ok: false, error: err });
    return;
  }
  let more: boolean;
  try {
    more = ftsMergeStep(conn, table as (typeof MERGED_INDEXES)[number], m.pace.pages);
    if (!walStillOurs(conn)) throw notOursError();
    tx.commit.run();
  } catch (err) {
    if (conn.inTransaction) tx.rollback.run();
    merging = null;
    maintained(m.id, { ok: false, error: err });
    return;
  }
  const ms = performance.now() - start;
  m.pace.took(ms);
  m.steps++;
  m.maxStepMs = Math.max(m.maxStepMs, ms);
  if (!more) m.at++;
}

/** Transaction control, prepared once: these run several times per request. */
interface TransactionStatements {
  begin: Statement;
  commit: Statement;
  rollback: Statement;
  savepoint: Statement;
  release: Statement;
  rollbackTo: Statement;
}
let tx: TransactionStatements;
/**
 * The file's schema version when a newer Hermes made it: the connection is read-only, nothing is
 * written (no checkpoint either) and any write that still reaches the thread fails with SCHEMA.
 */
let newerVersion: number | null = null;

const db: Connection | null = (() => {
  try {
    const opened = openDatabase(config.path, {
      busyTimeoutMs: LOCK_BUSY_TIMEOUT_MS,
      synchronous: config.synchronous,
      retry: OPEN_RETRY,
      create: true,
    });
    const conn = opened.db;
    newerVersion = opened.newerVersion;
    if (newerVersion !== null) return conn;
    conn.pragma(`journal_size_limit = ${Math.floor(config.walLimitBytes)}`);
    cjkIndexed = ensureCjkIndex(conn);
    walFiles = watchWalFiles();
    cjkBehind = cjkIndexed;
    cjkSweep = cjkIndexed;
    tx = {
      begin: conn.prepare("BEGIN IMMEDIATE"),
      commit: conn.prepare("COMMIT"),
      rollback: conn.prepare("ROLLBACK"),
      savepoint: conn.prepare("SAVEPOINT request"),
      release: conn.prepare("RELEASE request"),
      rollbackTo: conn.prepare("ROLLBACK TO request"),
    };
    return conn;
  } catch (err) {
    post({ type: "failed", error: toWireError(err) });
    return null;
  }
})();

/** Opens the writer's descriptors on its WAL and wal-index; a failure leaves them unwatched (logged). */
function watchWalFiles(): WalFiles | null {
  try {
    return WalFiles.open(config.path);
  } catch (err) {
    post({ type: "log", line: `the WAL is not watched: ${(err as Error).message}` });
    return null;
  }
}

/**
 * Whether the WAL and wal-index are still the files opened, whole. The first time they are not,
 * says so to the daemon (which stops) and, after a truncation, cuts what is left of the WAL to a
 * length that replays consistently. An unlinked WAL is still ours to read: the checkpoints that
 * follow (`salvageWal` at once, and the one at the close) copy it into the database,
 * acknowledged writes with it.
 */
function walStillOurs(conn: Connection, locked = true): boolean {
  if (walLost !== null || fileReplaced) return false;
  let loss = walFiles?.check() ?? null;
  if (loss !== null && !locked) {
    // Without the write lock another process may be resetting the WAL (a TRUNCATE checkpoint
    // empties the index, then the file): a moment later that shows whole.
    pause(5);
    loss = walFiles?.check() ?? null;
  }
  if (loss === null) return true;
  if (loss.kind === "removed" && !stillServed(config.path, config.identity)) {
    // The database itself is gone (its folder removed, or it was replaced): the file watch's
    // case (exit 0 when removed, 1 when replaced), not the WAL's. Nothing more is written.
    fileReplaced = true;
    return false;
  }
  walLost = loss;
  let line = loss.message;
  if (loss.kind === "truncated") {
    try {
      const kept = walFiles!.cutToLastCommit();
      line += kept === 0 ? "; the rest of it was emptied (the database file holds the last checkpoint)" : `; it was cut back to its last whole transaction (${kept} frames)`;
    } catch (err) {
      line += `; cutting it back failed: ${(err as Error).message}`;
    }
  }
  post({ type: "walLost", kind: loss.kind, message: line });
  return false;
}

/** An unlinked WAL is copied into the database at once (outside any transaction: a checkpoint cannot run in one). */
function salvageWal(conn: Connection): void {
  if (walLost?.kind === "removed" && !conn.inTransaction) checkpoint(conn, "PASSIVE", false);
}

/** Why a write is refused once the WAL (or the database) is not ours. */
function notOursError(): SessionDBError {
  return walLost !== null ? walLostError(walLost) : replaced();
}

function walLostError(loss: WalLoss): SessionDBError {
  return new SessionDBError("UNAVAILABLE", `${loss.message}; this write was not applied; the daemon is stopping, retry`);
}

function fail(job: WriteJob, err: unknown): WriteOutcome {
  return { seq: job.seq, ok: false, error: toWireError(err) };
}

/** The file was replaced (or removed) under the daemon: what was just committed went to the old one. */
function replaced(): SessionDBError {
  return new SessionDBError(
    "UNAVAILABLE",
    `${config.path} was replaced or removed while the daemon had it open: this write is not in ${config.path} (at most it went to the old file); the daemon is stopping, retry`,
  );
}

function stopped(): SessionDBError {
  return new SessionDBError("CLOSED", "the daemon is shutting down: the maintenance did not run to its end");
}

function expiredError(job: WriteJob): SessionDBError {
  return new SessionDBError("TIMEOUT", `${job.op} was not started before its deadline; it was not applied`);
}

/** Answers the jobs whose deadline has passed, without applying them. Returns the live ones. */
function dropExpired(jobs: WriteJob[]): WriteJob[] {
  const now = Date.now();
  const live = jobs.filter((j) => j.deadline > now);
  if (live.length < jobs.length) {
    const expired = jobs.filter((j) => j.deadline <= now);
    post({
      type: "unapplied",
      outcomes: expired.map((j) =>
        fail(j, expiredError(j)),
      ),
    });
  }
  return live;
}

/**
 * Takes the write lock for the live jobs (expired ones are answered TIMEOUT). Null when another
 * process holds it: the caller tries again after a pause, back in the event loop, so requests
 * that arrive meanwhile join the wait and expire on time too. Any other failure to begin (I/O)
 * is every job's answer. Returns the jobs to run.
 */
function acquireLock(jobs: WriteJob[]): WriteJob[] | null {
  if (jobs.length === 0) return jobs;
  try {
    tx.begin.run();
    return jobs;
  } catch (err) {
    if (isBusyError(err)) return null;
    post({ type: "unapplied", outcomes: jobs.map((j) => fail(j, err)) });
    return [];
  }
}

/** Runs one job inside its own savepoint. */
function apply(conn: Connection, job: WriteJob): WriteOutcome {
  tx.savepoint.run();
  try {
    const result = runOperation(conn, job.op, job.params);
    tx.release.run();
    return { seq: job.seq, ok: true, result };
  } catch (err) {
    if (conn.inTransaction) {
      tx.rollbackTo.run();
      tx.release.run();
    }
    return fail(job, err);
  }
}

/** One group commit. False when another process holds the write lock (the jobs stay queued). */
function runBatch(conn: Connection): boolean {
  if (fileReplaced) {
    post({ type: "unapplied", outcomes: queue.splice(0).map((j) => fail(j, replaced())) });
    return true;
  }
  if (walLost !== null) {
    const loss = walLost;
    post({ type: "unapplied", outcomes: queue.splice(0).map((j) => fail(j, walLostError(loss))) });
    return true;
  }
  if (newerVersion !== null) {
    const version = newerVersion;
    post({ type: "unapplied", outcomes: queue.splice(0).map((j) => fail(j, newerSchemaError(config.path, version, j.op))) });
    return true;
  }
  const live = dropExpired(queue.splice(0, config.maxBatch));
  let jobs = acquireLock(live);
  if (jobs === null) {
    queue.unshift(...live);
    return false;
  }
  if (jobs.length === 0) return true;
  const lockedAt = performance.now();
  const outcomes: WriteOutcome[] = [];
  let done = 0;
  for (const job of jobs) {
    if (done > 0 && performance.now() - lockedAt > config.maxBatchMs) break;
    // Checked again as each request starts: the ones before it in the batch took time.
    outcomes.push(Date.now() < job.deadline ? apply(conn, job) : fail(job, expiredError(job)));
    done++;
    if (!conn.inTransaction) break; // SQLite rolled the whole transaction back (disk full, I/O error)
  }
  queue.unshift(...jobs.slice(done));
  jobs = jobs.slice(0, done);
  if (conn.inTransaction && cjkIndexed) {
    uncaughtRequests += jobs.length;
    if (jobs.some((j) => deletesMessages(j.op))) cjkBehind = cjkSweep = true;
    if (cjkBehind || uncaughtRequests >= CJK_CATCH_UP_REQUESTS || lockedAt - cjkCaughtUpAt >= CJK_CATCH_UP_MS) {
      cjkBehind = catchUpCjkIndex(conn) || cjkBehind;
      caughtUp();
    }
  }
  const commitStart = performance.now();
  if (conn.inTransaction) {
    // Until these outcomes are posted, a death of this thread leaves their fate unknown.
    committing[0] = jobs[0]?.seq ?? 0;
    committing[1] = jobs.at(-1)?.seq ?? 0;
    try {
      // Checked under the write lock, before COMMIT writes: a WAL cut short would get frames
      // past a hole, unseen by any size check afterwards.
      if (!walStillOurs(conn)) {
        tx.rollback.run();
        salvageWal(conn);
        const err = notOursError();
        outcomes.splice(0, outcomes.length, ...jobs.map((j) => fail(j, err)));
      } else {
        tx.commit.run();
        if (!stillServed(config.path, config.identity)) {
          fileReplaced = true;
          outcomes.splice(0, outcomes.length, ...jobs.map((j) => fail(j, replaced())));
        }
      }
    } catch (err) {
      if (conn.inTransaction) tx.rollback.run();
      outcomes.splice(0, outcomes.length, ...jobs.map((j) => fail(j, err)));
    }
  } else {
    // Nothing of this transaction survived: no request in it may be acknowledged.
    const cause = outcomes.findLast((o) => !o.ok);
    const err = cause && !cause.ok ? cause.error : { code: "IO" as const, message: "the transaction was rolled back" };
    outcomes.splice(0, outcomes.length, ...jobs.map((j) => ({ seq: j.seq, ok: false as const, error: err })));
  }
  const end = performance.now();
  if (outcomes.some((o) => !o.ok && o.error.code === "IO")) reclaimWal = true;
  if (crashAfterCommit) throw new Error("writer crashed after COMMIT on purpose (fault injection)");
  post({ type: "batch", outcomes, commitMs: end - commitStart, lockMs: end - lockedAt });
  committing.fill(0);
  return true;
}

/** The checkpoint's result, or null when it failed (the failure goes to the daemon, which logs it). */
function checkpoint(conn: Connection, mode: "PASSIVE" | "TRUNCATE", requested: boolean): CheckpointResult | null {
  if (walLost?.kind === "truncated") {
    // What is left of the WAL stays as cut: a checkpoint would copy a part of it, and no more.
    post({ type: "checkpointFailed", error: toWireError(walLostError(walLost)), requested });
    return null;
  }
  if (newerVersion !== null) {
    // Not our file to write: a checkpoint would copy the WAL into it.
    const result = { mode, busy: 0, log: 0, checkpointed: 0 };
    post({ type: "checkpointed", result, requested });
    return result;
  }
  try {
    const row = conn.pragma(`wal_checkpoint(${mode})`, { simple: false }) as Array<Record<string, number>>;
    const r = row[0] ?? {};
    const result = { mode, busy: r.busy ?? 0, log: r.log ?? 0, checkpointed: r.checkpointed ?? 0 };
    post({ type: "checkpointed", result, requested });
    return result;
  } catch (err) {
    post({ type: "checkpointFailed", error: toWireError(err), requested });
    return null;
  }
}

/**
 * Creates the CJK search index when the file has none. Best effort: a file this process may
 * not write (or a SQLite without the trigram tokenizer) is served without it, by the LIKE scan.
 */
function ensureCjkIndex(conn: Connection): boolean {
  try {
    if (!hasCjkIndex(conn)) retryBusySync(OPEN_RETRY, () => inWriteTransaction(conn, () => createCjkIndex(conn)));
  } catch (err) {
    post({ type: "log", line: `no CJK search index: ${toSessionDBError(err).message}` });
  }
  return hasCjkIndex(conn);
}

/**
 * One chunk of CJK index upkeep while no request waits: index the backlog (a large file's first
 * start, the requests since the last catch-up), then, at the start and after deletions, sweep the
 * entries of deleted messages once round. True while there is more.
 * A locked file just means later.
 */
function idleCatchUp(conn: Connection): boolean {
  try {
    if (walLost !== null) return false;
    return inWriteTransaction(conn, () => {
      const more = catchUpCjkIndex(conn, CJK_IDLE_ROWS);
      caughtUp();
      let again = more;
      if (!more && cjkSweep) again = cjkSweep = sweepCjkIndex(conn);
      // Rolled back (by the throw) rather than committed into a WAL that is no longer ours.
      if (!walStillOurs(conn)) throw notOursError();
      return again;
    });
  } catch (err) {
    if (walLost !== null || fileReplaced) {
      salvageWal(conn);
      return false;
    }
    if (!isBusyError(err)) post({ type: "log", line: `CJK index upkeep failed: ${toSessionDBError(err).message}` });
    return false;
  }
}

function caughtUp(): void {
  uncaughtRequests = 0;
  cjkCaughtUpAt = performance.now();
}

function schedule(): void {
  if (scheduled) return;
  scheduled = true;
  if (idleTimer !== null) {
    clearTimeout(idleTimer);
    idleTimer = null;
  }
  setImmediate(step);
}

/** One turn of the loop: a batch, a requested checkpoint, or the close; then schedules the next. */
function step(): void {
  scheduled = false;
  const conn = db!;
  const canWrite = queue.length > 0 && !held;
  if (merging !== null && !held && (!canWrite || mergeTurn)) {
    mergeTurn = false;
    mergeStep(conn);
  } else if (canWrite) {
    mergeTurn = true;
    // After a long run of back-to-back transactions, leave the lock free for a moment so a
    // process writing the file directly (polling for the lock) gets its turn.
    const now = performance.now();
    busySince ??= now;
    if (now - busySince >= config.yieldEveryMs) {
      pause(config.yieldMs);
      busySince = performance.now();
    }
    if (reclaimWal) reclaimWal = checkpoint(conn, "TRUNCATE", false)?.log !== 0;
    if (!runBatch(conn)) {
      // Another process holds the write lock: try again shortly, with whatever arrives meanwhile.
      scheduled = true;
      setTimeout(step, jitterMs(LOCK_RETRY));
      return;
    }
  } else if (pendingCheckpoint !== null) {
    const { mode } = pendingCheckpoint;
    pendingCheckpoint = null;
    checkpoint(conn, mode, true);
  } else if (maintenanceQueue.length > 0 && !maintenanceBusy() && !held && !closing) {
    startMaintenance(conn);
  } else if (cjkBehind && !held && !closing) {
    cjkBehind = idleCatchUp(conn);
  } else if (closing && queue.length === 0 && !backingUp) {
    for (const job of maintenanceQueue.splice(0)) maintained(job.id, { ok: false, error: stopped() });
    if (merging !== null) maintained(merging.id, { ok: false, error: stopped() });
    merging = null;
    // A WAL truncated while the writer was idle is not checkpointed at the stop either.
    if (newerVersion === null) walStillOurs(conn, false);
    checkpoint(conn, "TRUNCATE", false);
    walFiles?.close();
    conn.close();
    post({ type: "closed" });
    port.close();
    return;
  }
  const maintenanceDue = !held && (merging !== null || (maintenanceQueue.length > 0 && !maintenanceBusy()));
  if ((queue.length > 0 && !held) || pendingCheckpoint !== null || (closing && !held) || (cjkBehind && !held) || maintenanceDue) {
    schedule();
  } else {
    busySince = null;
    idleTimer = setTimeout(() => {
      idleTimer = null;
      if (uncaughtRequests > 0 && !held && !closing) {
        // Quiet at last: the index catches up on the last requests in a transaction of its own
        // (this turn ends idle again, and the checkpoint follows). Once per quiet spell: a
        // catch-up that cannot run now does not hold the checkpoint up.
        uncaughtRequests = 0;
        cjkBehind = true;
        schedule();
      } else if (walStillOurs(conn, false) || walLost?.kind === "removed") {
        // An unlinked WAL is checkpointed too: that copies what it holds into the database.
        checkpoint(conn, "PASSIVE", false);
      }
    }, config.idleCheckpointMs);
  }
}

if (db !== null) {
  port.on("message", (message: ToWriter) => {
    switch (message.type) {
      case "writes":
        for (const job of message.jobs) queue.push(job);
        break;
      case "checkpoint":
        pendingCheckpoint = message;
        break;
      case "hold":
        held = message.on;
        break;
      case "close":
        closing = true;
        held = false;
        break;
      case "crash":
        if (!config.faultInjection) break;
        if (message.at === "afterCommit") crashAfterCommit = true;
        else throw new Error("writer crashed on purpose (fault injection)");
        break;
      case "maintain":
        maintenanceQueue.push({ id: message.id, task: message.task });
        break;
      case "maxPageCount":
        // SQLite's largest page count lifts the cap.
        if (config.faultInjection) db.pragma(`max_page_count = ${message.pages ?? 4294967294}`);
        break;
    }
    schedule();
  });
  post({ type: "ready", newerVersion });
  if (cjkBehind) schedule();
}

/**
 * The writer thread's side of the change feed (issue 26), on only while someone watches: after
 * each committed batch it reads what the batch changed (the sessions its writes name, the
 * messages past its cursor) and hands the events over with the batch's outcomes; every 50 ms it
 * checks `PRAGMA data_version`, which on this connection changes only when another process
 * committed (direct mode, the reference Python implementation), and then reads what changed.
 * Off, it costs the group commit one branch and nothing runs between batches.
 */
import { toSessionDBError, toWireError } from "../src/errors.js";
import { ChangeReader, dataVersion, type FeedEvent } from "../src/sqlite/change-reader.js";
import type { Connection } from "../src/sqlite/connection.js";
import { inReadSnapshot } from "../src/sqlite/transaction.js";
import { touchedSession } from "../src/operations/touched-sessions.js";
import { CHANGE_OF, changeKey, inWriteOrder } from "../src/operations/write-changes.js";
import type { WriteJob, WriteOutcome } from "../src/daemon/writer-messages.js";
import type { WriterContext } from "./writer-context.js";

/** How often commits by other processes are looked for while someone watches. */
const FOREIGN_POLL_MS = 50;
const EVERY_SESSION = { sessionId: null, source: null, afterMessageId: null } as const;

export class WriterFeed {
  readonly #ctx: WriterContext;
  #reader: ChangeReader | null = null;
  #version = 0;
  #timer: NodeJS.Timeout | null = null;

  constructor(ctx: WriterContext) {
    this.#ctx = ctx;
  }

  get on(): boolean {
    return this.#reader !== null;
  }

  /**
   * Turns the feed on (answered `feedStarted` with the cursor from which every message committed
   * is in the events) or off.
   */
  set(on: boolean): void {
    if (!on) {
      if (this.#timer !== null) clearInterval(this.#timer);
      this.#timer = null;
      this.#reader = null;
      return;
    }
    const { conn } = this.#ctx;
    if (this.#reader === null) {
      try {
        this.#version = dataVersion(conn);
        this.#reader = inReadSnapshot(conn, () => new ChangeReader(conn, EVERY_SESSION));
      } catch (err) {
        this.#ctx.post({ type: "feedFailed", error: toWireError(err) });
        return;
      }
      this.#timer = setInterval(() => this.#poll(), FOREIGN_POLL_MS);
    }
    this.#ctx.post({ type: "feedStarted", cursor: this.#reader.cursor });
  }

  /**
   * What a committed batch changed, read just after its COMMIT, in the order its writes ran
   * (`outcomes[i]` is `jobs[i]`'s): the look diffs the batch's sessions in one fixed order, and
   * one client's pipelined writes (or an end and a title) land in one batch.
   */
  afterCommit(jobs: readonly WriteJob[], outcomes: readonly WriteOutcome[]): FeedEvent[] {
    const reader = this.#reader!;
    const { conn } = this.#ctx;
    const ids = new Set<string>();
    const madeAt = new Map<string | number, number>();
    let all = Infinity;
    jobs.forEach((job, place) => {
      const id = touchedSession(job.op, job.params);
      if (id === null) all = Math.min(all, place);
      else ids.add(id);
      const outcome = outcomes[place];
      if (outcome === undefined || !outcome.ok) return; // rolled back alone: it changed nothing
      const change = CHANGE_OF[job.op];
      if (change !== undefined && id !== null && !madeAt.has(changeKey(change, id))) madeAt.set(changeKey(change, id), place);
      if (job.op === "appendMessage" && typeof outcome.result === "number") madeAt.set(outcome.result, place);
    });
    const events = this.#read(conn, () => reader.lookAt(conn, ids, all !== Infinity));
    return events === null ? this.#resync(conn) : inWriteOrder(events, madeAt, all);
  }

  /** Commits of other processes since the last look, a page of messages per message to the daemon. */
  #poll(): void {
    const reader = this.#reader;
    const { conn } = this.#ctx;
    if (reader === null || conn.inTransaction || !conn.open) return;
    let version: number;
    try {
      version = dataVersion(conn);
    } catch {
      return; // the connection is closing; the loop stops the feed
    }
    if (version === this.#version) return;
    this.#version = version;
    for (let more = true; more; ) {
      const look = this.#read(conn, () => reader.look(conn));
      if (look === null) {
        this.#ctx.post({ type: "feed", events: this.#resync(conn) });
        return;
      }
      if (look.events.length > 0) this.#ctx.post({ type: "feed", events: look.events });
      more = look.more;
    }
  }

  /** `fn`'s reads on one snapshot; null when they fail (logged). */
  #read<T>(conn: Connection, fn: () => T): T | null {
    try {
      return inReadSnapshot(conn, fn);
    } catch (err) {
      this.#ctx.post({ type: "log", line: `watch: reading what changed failed: ${toSessionDBError(err).message}; watchers get resync` });
      return null;
    }
  }

  /**
   * What changed cannot be read: watchers re-read, and the feed starts again from the newest
   * message (or, the file unreadable even so, where it was, to try again at the next look).
   */
  #resync(conn: Connection): FeedEvent[] {
    const fresh = this.#read(conn, () => new ChangeReader(conn, EVERY_SESSION));
    if (fresh !== null) this.#reader = fresh;
    return [{ event: { type: "resync", afterMessageId: this.#reader!.cursor }, source: null }];
  }
}


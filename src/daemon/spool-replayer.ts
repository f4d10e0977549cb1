import { mkdirSync, watch, type FSWatcher } from "node:fs";
import { basename } from "node:path";
import { toSessionDBError } from "../errors.js";
import { parseOperation } from "../operations/operation-params.js";
import { SpoolFile } from "../spool/spool-file.js";
import { replaySpool } from "../spool/spool-replay.js";
import type { DaemonWriter } from "./daemon-engine.js";
import type { DaemonLog } from "./daemon-log.js";

/** How soon a replay that could not apply a record tries again, while records are pending. */
const RETRY_MS = 2000;
/** How often the file is looked at when its folder cannot be watched (one stat). */
const POLL_MS = 10_000;

/**
 * The daemon's replay of the spool of its database (docs/spool.md): the spool of the user it runs
 * as (`$XDG_STATE_HOME/sessiondb/spool`, else `~/.local/state/sessiondb/spool`), a file of that
 * user's that no one else may write (SpoolFile checks it). It replays on start, whenever the file
 * changes (inotify on its folder: an idle daemon wakes for nothing) and, while records are
 * pending that could not be applied yet (the file locked by another process), every 2 s. Records
 * go through the writer like any client's write, one at a time, each with its own key.
 */
export class SpoolReplayer {
  readonly #spool: SpoolFile;
  readonly #writer: DaemonWriter;
  readonly #requestTimeoutMs: number;
  readonly #log: DaemonLog;
  #watcher: FSWatcher | null = null;
  #timer: NodeJS.Timeout | null = null;
  #pollTimer: NodeJS.Timeout | null = null;
  /** The replay running now; another one asked for meanwhile runs after it. */
  #running: Promise<void> | null = null;
  #again = false;
  #closed = false;
  /** The last failure said in the log (said once until it changes). */
  #lastFailure = "";

  constructor(identity: string, dir: string, writer: DaemonWriter, requestTimeoutMs: number, log: DaemonLog) {
    this.#spool = new SpoolFile(identity, dir);
    this.#writer = writer;
    this.#requestTimeoutMs = requestTimeoutMs;
    this.#log = log;
  }

  get path(): string {
    return this.#spool.path;
  }

  /** A replay is running, or records are pending that it tries again soon (the writer is kept meanwhile). */
  get pending(): boolean {
    return this.#running !== null || this.#timer !== null;
  }

  /** Watches the spool's folder (made, 0700, when missing) and replays what is there. */
  start(): void {
    const name = basename(this.#spool.path);
    try {
      mkdirSync(this.#spool.dir, { recursive: true, mode: 0o700 });
      this.#watcher = watch(this.#spool.dir, { persistent: false }, (_event, file) => {
        if (file === null || file === name) this.replaySoon();
      });
      this.#watcher.on("error", () => this.#poll());
    } catch {
      this.#poll();
    }
    this.replaySoon();
  }

  /** Replays now (or after the replay running now). */
  replaySoon(): void {
    if (this.#closed) return;
    if (this.#running !== null) {
      this.#again = true;
      return;
    }
    if (this.#spool.size() === 0) return;
    this.#running = this.#replay().finally(() => {
      this.#running = null;
      if (this.#again) {
        this.#again = false;
        this.replaySoon();
      }
    });
  }

  /** Stops watching and replaying; resolves once the replay running now has ended. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#watcher?.close();
    if (this.#timer !== null) clearTimeout(this.#timer);
    if (this.#pollTimer !== null) clearInterval(this.#pollTimer);
    await this.#running;
  }

  async #replay(): Promise<void> {
    try {
      const { applied, refused } = await replaySpool(this.#spool, (op, args, key) =>
        this.#writer.write(op, parseOperation(op, args), Date.now() + this.#requestTimeoutMs, key),
      );
      this.#lastFailure = "";
      if (applied > 0 || refused.length > 0) {
        const dropped = refused.map((r) => `${r.op} ${r.code}: ${r.message}`).join("; ");
        this.#log(`spool ${this.#spool.path}: replayed ${applied} write(s)${refused.length > 0 ? `, dropped ${refused.length} refused for good (${dropped})` : ""}`, {
          spool: this.#spool.path, applied, refused: refused.length,
        });
      }
    } catch (err) {
      const e = toSessionDBError(err);
      const said = `${e.code}: ${e.message}`;
      if (said !== this.#lastFailure) {
        this.#lastFailure = said;
        this.#log(`spool ${this.#spool.path}: cannot replay yet (${said}); retrying while records are pending`, { spool: this.#spool.path, code: e.code });
      }
      // Refused for ever (another user's file, one others may write): only a change of the file tries again.
      if (e.code !== "PERMISSION") this.#retryLater(RETRY_MS);
    }
  }

  #retryLater(ms: number): void {
    if (this.#closed || this.#timer !== null) return;
    this.#timer = setTimeout(() => {
      this.#timer = null;
      this.replaySoon();
    }, ms);
    this.#timer.unref();
  }

  /** No watch on the folder: the file is looked at every 10 s instead. */
  #poll(): void {
    this.#watcher?.close();
    this.#watcher = null;
    if (this.#closed || this.#pollTimer !== null) return;
    this.#pollTimer = setInterval(() => this.replaySoon(), POLL_MS);
    this.#pollTimer.unref();
  }
}

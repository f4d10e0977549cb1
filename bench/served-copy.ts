/**
 * A working copy of a cached corpus, served one of two ways: `direct` (processes open the file
 * themselves) or `daemon` (a `sessiondb serve` process owns it). The read-side checks and the
 * WAL growth check run on one, with a writer appending flat out in the same way.
 */
import { copyFileSync, mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { BenchChild } from "./child-process.js";
import type { Corpus } from "./corpus.js";
import { DaemonProcess } from "./daemon-process.js";
import { workerScript } from "./paths.js";
import type { WriterConfig, WriterReport } from "./workers/protocol.js";

export const VIAS = ["direct", "daemon"] as const;
export type Via = (typeof VIAS)[number];

/** Appends a flat-out writer keeps in flight through the daemon (direct mode: one at a time). */
const DAEMON_WRITER_IN_FLIGHT = 64;
/** Runs until told to stop. */
const UNTIL_STOPPED_S = 24 * 3600;

export interface ServeOptions {
  via: Via;
  dir: string;
  socket: string;
  synchronous: "FULL" | "NORMAL";
  walLimitMb: number | null;
}

export class ServedCopy {
  readonly via: Via;
  readonly db: string;
  readonly daemon: DaemonProcess | null;
  readonly #dir: string;
  readonly #synchronous: "FULL" | "NORMAL";

  private constructor(options: ServeOptions, db: string, daemon: DaemonProcess | null) {
    this.via = options.via;
    this.db = db;
    this.daemon = daemon;
    this.#dir = options.dir;
    this.#synchronous = options.synchronous;
  }

  static async open(corpus: Corpus, options: ServeOptions): Promise<ServedCopy> {
    mkdirSync(options.dir, { recursive: true });
    const db = join(options.dir, "corpus.db");
    copyFileSync(corpus.path, db);
    const daemon =
      options.via === "daemon"
        ? await DaemonProcess.start({ db, socket: options.socket, synchronous: options.synchronous, walLimitMb: options.walLimitMb })
        : null;
    return new ServedCopy(options, db, daemon);
  }

  /** How clients open this copy. */
  get openOptions(): { path: string; mode: Via; socketPath?: string } {
    return this.daemon === null ? { path: this.db, mode: "direct" } : { path: this.db, mode: "daemon", socketPath: this.daemon.socket };
  }

  /**
   * A writer process appending as fast as this way allows, until `stop()`: direct mode's
   * one-at-a-time jittered writer, or a daemon client keeping 64 appends in flight.
   */
  flatOutWriter(messagesFile: string): BenchChild<WriterReport> {
    const config: WriterConfig = {
      db: this.db,
      socket: this.daemon?.socket ?? null,
      sessionId: `bench-writer-${this.via}`,
      messagesFile,
      offset: 0,
      seconds: UNTIL_STOPPED_S,
      synchronous: this.#synchronous,
      operation: "append",
      inFlight: this.daemon === null ? 1 : DAEMON_WRITER_IN_FLIGHT,
      batch: 1,
      warmup: 0,
    };
    return BenchChild.node(workerScript(this.daemon === null ? "jitter" : "daemon"), config);
  }

  /** Stops the daemon (if any) and removes the copy. */
  async close(): Promise<void> {
    try {
      await this.daemon?.stop();
    } finally {
      this.daemon?.kill();
      rmSync(this.#dir, { recursive: true, force: true });
    }
  }
}

/**
 * The writer's fault injection, for the tests only (`faultInjection` in its configuration, never
 * set in production): the thread dies on purpose, at once or right after its next COMMIT, and the
 * file is capped to play a full disk.
 */
import type { Connection } from "../src/sqlite/connection.js";
import type { WriterCrashPoint } from "../src/protocol/control.js";

export class FaultInjection {
  readonly #enabled: boolean;
  readonly #conn: Connection;
  /** The thread dies right after its next COMMIT, before answering that batch. */
  #crashAfterCommit = false;

  constructor(enabled: boolean, conn: Connection) {
    this.#enabled = enabled;
    this.#conn = conn;
  }

  crash(at: WriterCrashPoint): void {
    if (!this.#enabled) return;
    if (at === "afterCommit") this.#crashAfterCommit = true;
    else throw new Error("writer crashed on purpose (fault injection)");
  }

  /** Caps the file at `pages` (PRAGMA max_page_count); null lifts the cap. */
  capPages(pages: number | null): void {
    // SQLite's largest page count lifts the cap.
    if (this.#enabled) this.#conn.pragma(`max_page_count = ${pages ?? 4294967294}`);
  }

  /** Between a COMMIT and the answer of its batch. */
  afterCommit(): void {
    if (this.#crashAfterCommit) throw new Error("writer crashed after COMMIT on purpose (fault injection)");
  }
}

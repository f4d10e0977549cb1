import { existsSync } from "node:fs";
import { stillServed, type FileIdentity } from "../file-identity.js";
import type { DirectoryWatch } from "./directory-watch.js";

/** How often the path is checked when its directory cannot be watched. */
const POLL_MS = 100;
/** How often it is checked anyway while the directory is watched (a moved directory sends no event of the path's). */
const SAFETY_POLL_MS = 5000;

/**
 * Notices when the database's path stops naming the file the daemon has open (`mv backup.db
 * state.db`, or the file removed): the daemon would otherwise keep serving an unlinked inode and
 * every write it acknowledged from then on would be lost with it. The writer also checks after
 * each commit (workers/writer.ts), so no write committed to the old file is acknowledged.
 * Checked when the directory reports a change of the path, and on a slow poll (a fast one when
 * the directory cannot be watched), so an idle daemon does not wake ten times a second for it.
 */
export class FileWatch {
  readonly #path: string;
  readonly #served: FileIdentity;
  readonly #onLost: (how: "replaced" | "removed") => void;
  readonly #directory: DirectoryWatch;
  #timer: NodeJS.Timeout | null = null;
  #stopped = false;

  /** `onLost` learns whether another file is at the path now ("replaced") or none ("removed"). */
  constructor(path: string, served: FileIdentity, directory: DirectoryWatch, onLost: (how: "replaced" | "removed") => void) {
    this.#path = path;
    this.#served = served;
    this.#onLost = onLost;
    this.#directory = directory;
    directory.on(path, () => this.check());
    this.#poll();
  }

  #poll(): void {
    this.#timer = setTimeout(() => {
      this.check();
      if (!this.#stopped) this.#poll();
    }, this.#directory.watching ? SAFETY_POLL_MS : POLL_MS);
    this.#timer.unref();
  }

  /** Checks the path now (also as a client connects: it must not be served a file that is gone). */
  check(): void {
    if (this.#stopped || stillServed(this.#path, this.#served)) return;
    this.stop();
    this.#onLost(existsSync(this.#path) ? "replaced" : "removed");
  }

  stop(): void {
    this.#stopped = true;
    if (this.#timer !== null) clearTimeout(this.#timer);
  }
}

import { existsSync } from "node:fs";
import { stillServed, type FileIdentity } from "../file-identity.js";

const CHECK_INTERVAL_MS = 100;

/**
 * Notices when the database's path stops naming the file the daemon has open (`mv backup.db
 * state.db`, or the file removed): the daemon would otherwise keep serving an unlinked inode and
 * every write it acknowledged from then on would be lost with it. The writer also checks after
 * each commit (workers/writer.ts), so no write committed to the old file is acknowledged.
 */
export class FileWatch {
  readonly #timer: NodeJS.Timeout;

  /** `onLost` learns whether another file is at the path now ("replaced") or none ("removed"). */
  constructor(path: string, served: FileIdentity, onLost: (how: "replaced" | "removed") => void) {
    this.#timer = setInterval(() => {
      if (stillServed(path, served)) return;
      this.stop();
      onLost(existsSync(path) ? "replaced" : "removed");
    }, CHECK_INTERVAL_MS);
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
  }
}

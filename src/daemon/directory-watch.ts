import { existsSync, watch, type FSWatcher } from "node:fs";
import { basename, dirname } from "node:path";

/**
 * After a folder reports a change, its watch rests this long: every page SQLite writes to the
 * `-wal` is an event, a dozen per append, each a wake-up of the main thread and a callback. Once
 * the rest is over the folder is watched again and every listener hears of it (what changed
 * meanwhile went unreported).
 */
const REST_MS = 100;

interface Folder {
  /** Null while it cannot be watched, or while its watch rests. */
  watcher: FSWatcher | null;
  /** Set while the watch rests after a change: the folder counts as watched. */
  resting: NodeJS.Timeout | null;
  listeners: Map<string, Array<() => void>>;
}

/**
 * Watches (inotify) on the folders of the daemon's files, telling its checks which of their
 * entries changed: the database's name (replaced, removed), its `-wal` (written), the sockets and
 * lock files (removed). An idle daemon then wakes for nothing; the checks used to poll several
 * times a second each. WAL mode needs every process on this host, whose changes the kernel
 * reports; the checks keep a slow poll as a safety net. A folder that cannot be watched (no
 * inotify left), or that was removed, makes `watching` false: the checks then poll as they did,
 * until `rewatch()` finds the folder again.
 */
export class DirectoryWatch {
  /** By folder: its watcher (null while it cannot be watched) and its listeners by entry name. */
  readonly #folders = new Map<string, Folder>();
  #closed = false;

  /** Calls `listener` whenever the entry `path` may have changed (also when its folder went). */
  on(path: string, listener: () => void): void {
    const dir = dirname(path);
    let folder = this.#folders.get(dir);
    if (folder === undefined) {
      folder = { watcher: null, resting: null, listeners: new Map() };
      this.#folders.set(dir, folder);
      this.#watch(dir);
    }
    const name = basename(path);
    folder.listeners.set(name, [...(folder.listeners.get(name) ?? []), listener]);
  }

  /** False when some change may go unreported: the checks must poll often. */
  get watching(): boolean {
    for (const folder of this.#folders.values()) if (folder.watcher === null && folder.resting === null) return false;
    return true;
  }

  /** Watches again the folders that could not be (made again since). */
  rewatch(): void {
    for (const [dir, folder] of this.#folders) if (folder.watcher === null && folder.resting === null) this.#watch(dir);
  }

  #watch(dir: string): void {
    const folder = this.#folders.get(dir);
    if (folder === undefined || this.#closed) return;
    try {
      const watcher = watch(dir, { persistent: false }, (_event, name) => this.#changed(dir, name));
      // A watch that fails later leaves the checks to their polls.
      watcher.on("error", () => this.#lost(dir));
      folder.watcher = watcher;
    } catch {
      folder.watcher = null;
    }
  }

  /** Closes the folder's watch for REST_MS after a change, then watches it again and tells every listener. */
  #rest(dir: string, folder: Folder): void {
    if (folder.resting !== null) return;
    folder.watcher?.close();
    folder.watcher = null;
    folder.resting = setTimeout(() => {
      folder.resting = null;
      if (this.#closed) return;
      this.#watch(dir);
      for (const list of folder.listeners.values()) for (const listener of list) listener();
    }, REST_MS);
    folder.resting.unref();
  }

  /** The folder's watch ended (the folder removed or moved): every listener hears of it. */
  #lost(dir: string): void {
    const folder = this.#folders.get(dir);
    if (folder === undefined) return;
    folder.watcher?.close();
    folder.watcher = null;
    for (const list of folder.listeners.values()) for (const listener of list) listener();
  }

  #changed(dir: string, name: string | Buffer | null): void {
    const folder = this.#folders.get(dir);
    if (folder === undefined) return;
    // The folder itself removed or moved is reported under its own name; no name: the kernel's
    // queue overflowed, so anything may have changed.
    if (name === null || (String(name) === basename(dir) && !existsSync(dir))) {
      if (!existsSync(dir)) this.#lost(dir);
      else for (const list of folder.listeners.values()) for (const listener of list) listener();
      return;
    }
    const listeners = folder.listeners.get(String(name));
    // Another program's file in a shared folder (the runtime folder's other daemons): nothing to rest for.
    if (listeners === undefined) return;
    this.#rest(dir, folder);
    for (const listener of listeners) listener();
  }

  close(): void {
    this.#closed = true;
    for (const folder of this.#folders.values()) {
      folder.watcher?.close();
      folder.watcher = null;
      if (folder.resting !== null) clearTimeout(folder.resting);
      folder.resting = null;
    }
  }
}

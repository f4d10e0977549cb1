/**
 * Lines of an import set aside until their parent session has been imported, kept in a temporary
 * file (only their offsets stay in memory), so that importing a large export needs no more
 * memory than its largest session.
 */
import { mkdtemp, open, rm, type FileHandle } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface DeferredLine {
  /** Line number in the input. */
  readonly line: number;
  readonly id: string;
  readonly parentId: string;
  readonly offset: number;
  readonly length: number;
}

export class DeferredLines {
  readonly entries: DeferredLine[] = [];
  #dir: string | null = null;
  #file: FileHandle | null = null;
  #size = 0;

  async add(text: string, line: number, id: string, parentId: string): Promise<void> {
    const file = await this.#open();
    const bytes = Buffer.from(text, "utf8");
    await file.write(bytes, 0, bytes.length, this.#size);
    this.entries.push({ line, id, parentId, offset: this.#size, length: bytes.length });
    this.#size += bytes.length;
  }

  async read(entry: DeferredLine): Promise<string> {
    const bytes = Buffer.alloc(entry.length);
    await (await this.#open()).read(bytes, 0, entry.length, entry.offset);
    return bytes.toString("utf8");
  }

  /** Closes and removes the temporary file. Idempotent. */
  async dispose(): Promise<void> {
    const [file, dir] = [this.#file, this.#dir];
    this.#file = null;
    this.#dir = null;
    await file?.close();
    if (dir !== null) await rm(dir, { recursive: true, force: true });
  }

  async #open(): Promise<FileHandle> {
    if (this.#file === null) {
      this.#dir = await mkdtemp(join(tmpdir(), "sessiondb-import-"));
      this.#file = await open(join(this.#dir, "deferred.jsonl"), "w+", 0o600);
    }
    return this.#file;
  }
}

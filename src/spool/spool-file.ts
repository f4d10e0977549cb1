/**
 * The durable spool's file (issue 25 item 3; format in docs/spool.md, shared with the Python
 * client's python/sessiondb/spool.py byte for byte): a write that could not be applied before its
 * deadline is appended, with its idempotency key, to a file of the calling user, one per database
 * identity, and applied later exactly once, in order.
 *
 * A line is `<16 hex: sha256 of the JSON text> <JSON text>\n`: a record `{"v":1,"key","op","args",
 * "ts","db"}` or an acknowledgement `{"v":1,"ack":key}` written once the record's write was
 * applied. A line without its newline or with a bad checksum (a writer killed mid-append) is
 * ignored, and cut off by the next append. Every access holds flock(LOCK_EX) (the Python client
 * takes the same lock with fcntl.flock); appends fsync before they return; once every record is
 * acknowledged the file is emptied.
 */
import { createHash } from "node:crypto";
import { chmodSync, constants, existsSync, lstatSync, mkdirSync, readdirSync, statSync } from "node:fs";
import { open, type FileHandle } from "node:fs/promises";
import { homedir } from "node:os";
import { join } from "node:path";
import { SessionDBError } from "../errors.js";
import { lockExclusive } from "../file-guard.js";

/** The default bound of one spool file, in bytes. */
export const SPOOL_MAX_BYTES = 64 * 1024 * 1024;
const VERSION = 1;
/** How long an access waits for another process's lock on the file (held only for an append or a read). */
const LOCK_WAIT_S = 30;

/** One spooled write, as a line holds it. */
export interface SpoolRecord {
  readonly v: 1;
  /** The write's idempotency key. */
  readonly key: string;
  /** The protocol op (`appendMessage`…). */
  readonly op: string;
  /** The op's arguments as sent on the wire (no `WriteOptions`). */
  readonly args: unknown[];
  /** When it was written, in seconds since the epoch. */
  readonly ts: number;
  /** The database identity. */
  readonly db: string;
}

/** `$XDG_STATE_HOME/sessiondb/spool`, else `~/.local/state/sessiondb/spool`: the calling user's. */
export function defaultSpoolDir(env: NodeJS.ProcessEnv = process.env): string {
  const state = env.XDG_STATE_HOME ? env.XDG_STATE_HOME : join(homedir(), ".local", "state");
  return join(state, "sessiondb", "spool");
}

/** The spool file of a database identity in `dir`: named by the first 32 hex digits of its SHA-256. */
export function spoolFilePath(dir: string, identity: string): string {
  return join(dir, `${createHash("sha256").update(identity).digest("hex").slice(0, 32)}.spool`);
}

export function encodeLine(value: object): Buffer {
  const text = JSON.stringify(value);
  return Buffer.from(`${createHash("sha256").update(text).digest("hex").slice(0, 16)} ${text}\n`);
}

/** The good lines in order, and the file's length up to its last complete line. */
export function decodeLines(data: Buffer): { values: Array<Record<string, unknown>>; end: number } {
  const values: Array<Record<string, unknown>> = [];
  const end = data.lastIndexOf(0x0a) + 1;
  let start = 0;
  while (start < end) {
    const stop = data.indexOf(0x0a, start);
    const line = data.subarray(start, stop);
    start = stop + 1;
    const space = line.indexOf(0x20);
    if (space < 0) continue;
    const text = line.subarray(space + 1);
    // Torn or damaged: never applied, in part or whole.
    if (createHash("sha256").update(text).digest("hex").slice(0, 16) !== line.subarray(0, space).toString("latin1")) continue;
    let value: unknown;
    try {
      value = JSON.parse(text.toString("utf8"));
    } catch {
      continue;
    }
    if (typeof value === "object" && value !== null && !Array.isArray(value) && (value as { v?: unknown }).v === VERSION) {
      values.push(value as Record<string, unknown>);
    }
  }
  return { values, end };
}

/** The records of `values` that no acknowledgement follows, in file order. */
export function pendingRecords(values: ReadonlyArray<Record<string, unknown>>): SpoolRecord[] {
  const acked = new Set<unknown>(values.map((v) => v.ack).filter((k) => typeof k === "string"));
  return values.filter((v): v is Record<string, unknown> & SpoolRecord => isRecord(v) && !acked.has(v.key));
}

function isRecord(v: Record<string, unknown>): v is Record<string, unknown> & SpoolRecord {
  return typeof v.key === "string" && typeof v.op === "string" && Array.isArray(v.args) && typeof v.ts === "number" && typeof v.db === "string";
}

/**
 * Arguments the file can hold exactly: JSON data (null, booleans, strings, finite numbers, arrays,
 * plain objects; an object's undefined field is left out, as on the wire). Else why not.
 */
export function notJsonData(value: unknown, path = "args"): string | null {
  if (value === null || typeof value === "string" || typeof value === "boolean") return null;
  if (typeof value === "number") return Number.isFinite(value) ? null : `${path} is ${value}`;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const why = value[i] === undefined ? `${path}[${i}] is undefined` : notJsonData(value[i], `${path}[${i}]`);
      if (why !== null) return why;
    }
    return null;
  }
  if (typeof value === "object") {
    const proto = Object.getPrototypeOf(value) as unknown;
    if (proto !== Object.prototype && proto !== null) return `${path} is a ${(value as object).constructor?.name ?? "non-plain object"}`;
    for (const [k, v] of Object.entries(value)) {
      const why = v === undefined ? null : notJsonData(v, `${path}.${k}`);
      if (why !== null) return why;
    }
    return null;
  }
  return `${path} is a ${typeof value}`;
}

/** One spool file as `SpoolFile.list` finds it. */
export interface SpoolListing {
  readonly file: SpoolFile;
  readonly pending: SpoolRecord[];
  readonly size: number;
  /** Why it could not be read; null when it was. */
  readonly error: SessionDBError | null;
}

/** In-process queue per file: one access at a time, so no two of this process's wait on flock(1). */
const queues = new Map<string, Promise<unknown>>();

/** The spool file of one database identity, for this user. */
export class SpoolFile {
  readonly identity: string;
  readonly dir: string;
  readonly path: string;
  readonly maxBytes: number;

  constructor(identity: string, dir: string = defaultSpoolDir(), maxBytes = SPOOL_MAX_BYTES, path = spoolFilePath(dir, identity)) {
    this.identity = identity;
    this.dir = dir;
    this.path = path;
    this.maxBytes = maxBytes;
  }

  /**
   * This user's spool files in `dir` (`*.spool`), each with the database its records name (the
   * first pending one's `db`; "" when none is pending) and what is pending, in name order. A file
   * that cannot be read (another user's, one others may write) comes with its error instead.
   */
  static async list(dir: string): Promise<SpoolListing[]> {
    let names: string[];
    try {
      names = readdirSync(dir).filter((name) => name.endsWith(".spool")).sort();
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return [];
      throw spoolIoError(dir, err);
    }
    const listings: SpoolListing[] = [];
    for (const name of names) {
      const path = join(dir, name);
      const unnamed = new SpoolFile("", dir, SPOOL_MAX_BYTES, path);
      try {
        const pending = await unnamed.pending();
        const identity = pending[0]?.db ?? "";
        listings.push({ file: new SpoolFile(identity, dir, SPOOL_MAX_BYTES, path), pending, size: unnamed.size(), error: null });
      } catch (err) {
        listings.push({ file: unnamed, pending: [], size: unnamed.size(), error: spoolIoError(path, err) });
      }
    }
    return listings;
  }

  /** The file's size; 0 when there is none (nothing pending, found without a lock). */
  size(): number {
    try {
      return statSync(this.path, { throwIfNoEntry: false })?.size ?? 0;
    } catch {
      return 0;
    }
  }

  /**
   * The write, durable (fsync'd) when this resolves. Rejects with IO when the spool is full or
   * cannot be written, INVALID_ARGUMENT when JSON cannot hold the arguments: the write was not taken.
   */
  async append(key: string, op: string, args: unknown[], ts: number): Promise<void> {
    const why = notJsonData(args);
    if (why !== null) throw new SessionDBError("INVALID_ARGUMENT", `${op}'s arguments cannot be spooled: ${why}`);
    const line = encodeLine({ v: VERSION, key, op, args, ts, db: this.identity });
    await this.#locked(true, async (file) => {
      await this.#appendLine(file, line, true);
    });
  }

  /** The records not yet acknowledged, in the order they were written. */
  async pending(): Promise<SpoolRecord[]> {
    if (this.size() === 0) return [];
    return this.#locked(false, async (file) => pendingRecords(decodeLines(await readAll(file)).values));
  }

  /** The record's write was applied (or refused for good); once none is left the file is emptied. */
  async acknowledge(key: string): Promise<void> {
    await this.#locked(false, async (file) => {
      await this.#appendLine(file, encodeLine({ v: VERSION, ack: key }), false);
      if (pendingRecords(decodeLines(await readAll(file)).values).length === 0) {
        await file.truncate(0);
        await file.sync();
      }
    });
  }

  async #appendLine(file: FileHandle, line: Buffer, bound: boolean): Promise<void> {
    const data = await readAll(file);
    const { end } = decodeLines(data);
    // A torn last line: it was acknowledged to no one.
    if (end !== data.length) await file.truncate(end);
    if (bound && end + line.length > this.maxBytes) {
      throw new SessionDBError("IO", `the spool ${this.path} is full (${end} bytes, at most ${this.maxBytes})`);
    }
    await file.write(line, 0, line.length, null);
    await file.sync();
  }

  /** Runs `body` on the file under its lock; `create`: made (and its folder) when missing. */
  #locked<T>(create: boolean, body: (file: FileHandle) => Promise<T>): Promise<T> {
    const run = async (): Promise<T> => {
      if (create) this.#makeDir();
      this.#checkDir();
      const made = create && !existsSync(this.path);
      let file: FileHandle;
      try {
        file = await open(this.path, constants.O_RDWR | constants.O_APPEND | constants.O_NOFOLLOW | (create ? constants.O_CREAT : 0), 0o600);
      } catch (err) {
        throw spoolIoError(this.path, err);
      }
      try {
        this.#checkFile(await file.stat());
        if (!(await lockExclusive(file.fd, LOCK_WAIT_S))) {
          throw new SessionDBError("IO", `cannot lock the spool ${this.path}: flock(1) (util-linux) cannot be run here, or another process held the lock ${LOCK_WAIT_S} s`);
        }
        const result = await body(file);
        // A new file's name is durable too: the folder is fsync'd once, when the file is made.
        if (made) await syncDir(this.dir);
        return result;
      } catch (err) {
        throw spoolIoError(this.path, err);
      } finally {
        await file.close();
      }
    };
    const previous = queues.get(this.path) ?? Promise.resolve();
    const result = previous.then(run, run);
    const settled = result.then(() => undefined, () => undefined);
    queues.set(this.path, settled);
    void settled.then(() => {
      if (queues.get(this.path) === settled) queues.delete(this.path);
    });
    return result;
  }

  #makeDir(): void {
    try {
      mkdirSync(this.dir, { recursive: true, mode: 0o700 });
      const stat = lstatSync(this.dir);
      if (stat.isDirectory() && stat.uid === process.geteuid?.() && (stat.mode & 0o077) !== 0) chmodSync(this.dir, 0o700);
    } catch (err) {
      throw spoolIoError(this.dir, err);
    }
  }

  /** The folder: a directory of this user's that no one else may write (else records could be planted). */
  #checkDir(): void {
    let stat;
    try {
      stat = lstatSync(this.dir);
    } catch (err) {
      throw spoolIoError(this.dir, err);
    }
    if (!stat.isDirectory()) throw new SessionDBError("PERMISSION", `the spool folder ${this.dir} is not a directory (a symbolic link is not followed)`);
    this.#checkOwner(this.dir, stat);
  }

  #checkFile(stat: { isFile(): boolean; uid: number; mode: number }): void {
    if (!stat.isFile()) throw new SessionDBError("PERMISSION", `the spool ${this.path} is not a regular file`);
    this.#checkOwner(this.path, stat);
  }

  #checkOwner(path: string, stat: { uid: number; mode: number }): void {
    const me = process.geteuid?.();
    if (me !== undefined && stat.uid !== me) {
      throw new SessionDBError("PERMISSION", `the spool ${path} belongs to uid ${stat.uid}, not to this user (uid ${me}): its records are not replayed`);
    }
    if ((stat.mode & 0o022) !== 0) {
      throw new SessionDBError("PERMISSION", `the spool ${path} may be written by others (mode ${(stat.mode & 0o777).toString(8)}): its records are not replayed`);
    }
  }
}

/** A file system error as IO, naming the spool; a SessionDBError passes through. */
function spoolIoError(path: string, err: unknown): SessionDBError {
  if (err instanceof SessionDBError) return err;
  return new SessionDBError("IO", `the spool ${path} cannot be used: ${(err as Error).message}`, { cause: err });
}

async function syncDir(dir: string): Promise<void> {
  const handle = await open(dir, constants.O_RDONLY | constants.O_DIRECTORY);
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

async function readAll(file: FileHandle): Promise<Buffer> {
  const { size } = await file.stat();
  const data = Buffer.alloc(size);
  let read = 0;
  while (read < size) {
    const { bytesRead } = await file.read(data, read, size - read, read);
    if (bytesRead === 0) break;
    read += bytesRead;
  }
  return data.subarray(0, read);
}

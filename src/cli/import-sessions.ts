/**
 * `sessiondb import`: restores sessions from JSONL (one `SessionExport` per line, as `export`
 * writes them), one `importSession` transaction per session, through the daemon or directly.
 *
 * Parents first: a session's parent must exist when it is written (foreign key), but an export
 * is newest first, so children usually come before their parents. A child whose parent is not
 * there yet is set aside (in a temporary file) and imported after the whole input has been read,
 * oldest first, when its parent is in; a child whose parent is in neither the database nor the
 * input is imported without a parent (reported as detached).
 */
import { createInterface } from "node:readline";
import type { Readable } from "node:stream";
import { SessionDBError } from "../errors.js";
import type { ImportOptions, ImportResult, SessionDB, SessionExport } from "../session-db.js";
import { DeferredLines, type DeferredLine } from "./deferred-lines.js";

export interface ImportSummary {
  imported: number;
  skipped: number;
  messages: number;
  /** Sessions left alone because their id already exists. */
  skippedIds: string[];
  /** Sessions imported without their parent, which is in neither the database nor the input. */
  detachedIds: string[];
  /** Sessions whose messages got new ids because some of theirs were taken. */
  renumberedIds: string[];
}

/** Where and why an import stopped; everything before that line is imported. */
export interface ImportFailure {
  line: number;
  error: SessionDBError;
}

function parseLine(text: string): SessionExport {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new SessionDBError("INVALID_ARGUMENT", `not valid JSON (${(err as Error).message})`);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new SessionDBError("INVALID_ARGUMENT", "expected a JSON object (one exported session)");
  }
  return value as SessionExport;
}

class Importer {
  readonly summary: ImportSummary = {
    imported: 0, skipped: 0, messages: 0, skippedIds: [], detachedIds: [], renumberedIds: [],
  };
  readonly #db: SessionDB;
  readonly #deferred = new DeferredLines();

  constructor(db: SessionDB) {
    this.#db = db;
  }

  async run(input: Readable): Promise<ImportFailure | null> {
    let failure: ImportFailure | null = null;
    let line = 0;
    try {
      for await (const text of createInterface({ input, crlfDelay: Infinity })) {
        line++;
        if (text.trim() === "") continue;
        failure = await this.#attempt(line, async () => {
          const session = parseLine(text);
          const result = await this.#db.importSession(session);
          if (result.status === "parent-missing") await this.#deferred.add(text, line, session.id, session.parent_session_id!);
          else this.#record(session.id, result);
        });
        if (failure !== null) break;
      }
      return await this.#finish(failure);
    } finally {
      await this.#deferred.dispose();
    }
  }

  /** What came before a bad line is imported, the sessions set aside included; the first failure wins. */
  async #finish(failure: ImportFailure | null): Promise<ImportFailure | null> {
    if (failure === null) return this.#importDeferred();
    try {
      await this.#importDeferred();
    } catch {
      // The connection went with the bad line (a frame too large for the daemon): report that line.
    }
    return failure;
  }

  /** Oldest first (the reverse of an export's order), so a parent goes in before its children. */
  async #importDeferred(): Promise<ImportFailure | null> {
    let waiting = [...this.#deferred.entries].reverse();
    const pending = new Set(waiting.map((e) => e.id));
    const waitsForParent = (e: DeferredLine) => e.parentId !== e.id && pending.has(e.parentId);
    while (waiting.length > 0) {
      const later: DeferredLine[] = [];
      // When every one left waits for another, their parents form a cycle: import them detached.
      const stuck = waiting.every(waitsForParent);
      for (const entry of waiting) {
        if (!stuck && waitsForParent(entry)) {
          later.push(entry);
          continue;
        }
        const failure = await this.#attempt(entry.line, async () => {
          const session = parseLine(await this.#deferred.read(entry));
          const options: ImportOptions = { detachMissingParent: true };
          this.#record(session.id, await this.#db.importSession(session, options));
        });
        if (failure !== null) return failure;
        pending.delete(entry.id);
      }
      waiting = later;
    }
    return null;
  }

  async #attempt(line: number, step: () => Promise<void>): Promise<ImportFailure | null> {
    try {
      await step();
      return null;
    } catch (err) {
      if (err instanceof SessionDBError && err.code !== "UNAVAILABLE" && err.code !== "CLOSED") return { line, error: err };
      throw err;
    }
  }

  #record(id: string, result: ImportResult): void {
    const s = this.summary;
    if (result.status === "exists") {
      s.skipped++;
      s.skippedIds.push(id);
      return;
    }
    s.imported++;
    s.messages += result.messages;
    if (result.parentDetached) s.detachedIds.push(id);
    if (result.renumbered) s.renumberedIds.push(id);
  }
}

/** Imports every line of `input`; returns what was done and, if it stopped early, where and why. */
export async function importSessions(
  db: SessionDB,
  input: Readable,
): Promise<{ summary: ImportSummary; failure: ImportFailure | null }> {
  const importer = new Importer(db);
  const failure = await importer.run(input);
  return { summary: importer.summary, failure };
}

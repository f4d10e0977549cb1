import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { createWriteStream, type WriteStream } from "node:fs";
import { rename, rm } from "node:fs/promises";
import { basename, dirname, join, resolve } from "node:path";
import { finished } from "node:stream/promises";
import type { Writable } from "node:stream";
import { Presets, SingleBar } from "cli-progress";
import type { Command } from "commander";
import { SessionDBError } from "../../errors.js";
import { checkReplaceableFile } from "../../regular-file.js";
import type { SessionDB, SessionExport } from "../../session-db.js";
import { CliError, UsageError } from "../cli-error.js";
import { plural } from "../format.js";
import { withStore } from "../open-store.js";
import { writeChunk } from "../output.js";
import { resolveSession } from "../resolve-session.js";

interface ExportCliOptions {
  source?: string;
  output?: string;
}

/** `--json` of `export -o FILE` (without `-o` stdout holds the JSONL itself). */
export interface ExportReport {
  exported: number;
  messages: number;
  file: string;
}

export function registerExport(program: Command): void {
  program
    .command("export")
    .description("write sessions as JSONL, one session with its messages per line, newest first (streamed)")
    .argument("[session]", "only this session: an id, a unique id prefix, or a title")
    .option("--source <source>", "only sessions of this source")
    .option("-o, --output <file>", "write to FILE (replaced whole, only once complete) instead of stdout")
    .action(async (ref: string | undefined, opts: ExportCliOptions, command: Command) => {
      if (ref !== undefined && opts.source !== undefined) throw new UsageError("give either SESSION or --source, not both");
      await withStore(command, { mustExist: true }, async ({ db }, out) => {
        const sessions = ref === undefined ? db.exportAll({ source: opts.source ?? null }) : oneSession(db, ref);
        if (opts.output === undefined) {
          await writeSessions(sessions, process.stdout, null);
          return;
        }
        const file = resolve(opts.output);
        checkReplaceableFile(file, "the export");
        const bar = process.stderr.isTTY && ref === undefined ? await progressBar(db, opts.source) : null;
        const counts = await writeFileAtomically(file, (stream) => writeSessions(sessions, stream, bar));
        const report: ExportReport = { ...counts, file };
        out.result(report, () =>
          out.line(`exported ${plural(counts.exported, "session")} (${plural(counts.messages, "message")}) to ${file}`),
        );
      });
    });
}

async function* oneSession(db: SessionDB, ref: string): AsyncIterable<SessionExport> {
  const session = await db.exportSession(await resolveSession(db, ref));
  if (session === null) throw new CliError("NOT_FOUND", `session ${JSON.stringify(ref)} was deleted meanwhile`);
  yield session;
}

async function progressBar(db: SessionDB, source: string | undefined): Promise<SingleBar> {
  const bar = new SingleBar(
    { stream: process.stderr, format: "exporting [{bar}] {value}/{total} sessions", hideCursor: true, etaBuffer: 50 },
    Presets.shades_classic,
  );
  bar.start(await db.sessionCount({ source: source ?? null }), 0);
  return bar;
}

/** One line per session, written as fast as the destination takes it: memory stays flat. */
async function writeSessions(
  sessions: AsyncIterable<SessionExport>,
  stream: Writable,
  bar: SingleBar | null,
): Promise<{ exported: number; messages: number }> {
  let exported = 0;
  let messages = 0;
  try {
    for await (const session of sessions) {
      await writeChunk(stream, `${JSON.stringify(session)}\n`);
      exported++;
      messages += session.messages.length;
      if (bar !== null) {
        if (exported > bar.getTotal()) bar.setTotal(exported);
        bar.increment();
      }
    }
  } finally {
    bar?.stop();
  }
  return { exported, messages };
}

/**
 * Writes beside the target and renames it into place, so FILE is never left half-written. The
 * temporary name is random and created exclusively (O_EXCL, which also refuses a symbolic link):
 * in a shared directory another user cannot plant a link there and have us write through it.
 */
async function writeFileAtomically<T>(file: string, write: (stream: WriteStream) => Promise<T>): Promise<T> {
  const partial = join(dirname(file), `.${basename(file)}.${randomBytes(12).toString("hex")}.partial`);
  const stream = createWriteStream(partial, { flags: "wx", mode: 0o600 });
  stream.on("error", () => {
    // Seen by the awaited open, drain or finish below, which reject with it.
  });
  let opened = false;
  // Only a file this process created is removed.
  const removePartial = () => (opened ? rm(partial, { force: true }) : Promise.resolve());
  const onSignal = () => void removePartial().finally(() => process.exit(130));
  process.once("SIGINT", onSignal);
  try {
    await once(stream, "open").catch((err: Error) => {
      throw new SessionDBError("IO", `cannot write ${file}: ${err.message}`);
    });
    opened = true;
    const result = await write(stream);
    stream.end();
    await finished(stream);
    await rename(partial, file);
    return result;
  } catch (err) {
    stream.destroy();
    await removePartial();
    throw err;
  } finally {
    process.off("SIGINT", onSignal);
  }
}

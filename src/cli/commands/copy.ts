/**
 * `sessiondb copy --from SRC --to DST`: every session with its messages from one store to another
 * (a SQLite file or a PostgreSQL URL on either side), streamed: the source's export feeds the
 * destination's import line by line, so memory stays flat whatever the size. Sessions already in
 * the destination are skipped, so a copy that was interrupted is finished by running it again.
 * At the end the counts are checked on both sides.
 */
import { existsSync } from "node:fs";
import { Readable } from "node:stream";
import type { Command } from "commander";
import { Presets, SingleBar } from "cli-progress";
import { SessionDBError } from "../../errors.js";
import { openSessionDB } from "../../open.js";
import type { SessionDB, SessionExport } from "../../session-db.js";
import { databaseIdentity, locateDatabase } from "../../engine-kind.js";
import { CliError } from "../cli-error.js";
import { plural } from "../format.js";
import { importSessions } from "../import-sessions.js";
import { checkDatabaseFile } from "../database-file.js";
import { globalsOf } from "../open-store.js";
import { Output } from "../output.js";

/** `--json` of `copy`. */
export interface CopyReport {
  from: string;
  to: string;
  /** Sessions the source held. */
  sessions: number;
  /** Sessions written to the destination by this run. */
  copied: number;
  /** Sessions the destination already had (an earlier run, or the same id). */
  skipped: number;
  /** Messages written by this run. */
  messages: number;
  /** Every source session is in the destination, and the destination grew by what was copied. */
  verified: true;
}

export function registerCopy(program: Command): void {
  program
    .command("copy")
    .description("copy every session with its messages from one store to another (SQLite file or postgres:// URL); safe to re-run")
    .requiredOption("--from <store>", "the source: a database file or a postgres:// URL")
    .requiredOption("--to <store>", "the destination: a database file or a postgres:// URL (created when missing)")
    .action(async (opts: { from: string; to: string }, command: Command) => {
      const globals = globalsOf(command);
      const out = new Output(globals.json === true);
      const from = locateDatabase(opts.from);
      const to = locateDatabase(opts.to);
      if (databaseIdentity(from) === databaseIdentity(to)) throw new SessionDBError("INVALID_ARGUMENT", "--from and --to name the same database");
      if (from.engine === "sqlite" && !existsSync(from.path)) throw new CliError("NOT_FOUND", `no database at ${from.path} to copy from`);
      // Files that are not ours are refused before SQLite opens them, as by every other command.
      if (from.engine === "sqlite") checkDatabaseFile(from.path);
      if (to.engine === "sqlite" && existsSync(to.path)) checkDatabaseFile(to.path);
      const mode = globals.direct === true ? "direct" : "auto";
      const source = await openSessionDB({ path: from.path, mode, create: false });
      try {
        const destination = await openSessionDB({ path: to.path, mode });
        try {
          const report = await copy(source, destination, { from: databaseIdentity(from), to: databaseIdentity(to) });
          out.result(report, () =>
            out.line(
              `copied ${plural(report.copied, "session")} (${plural(report.messages, "message")}), ` +
                `skipped ${report.skipped} already present; the destination holds all ${plural(report.sessions, "session")} of the source`,
            ),
          );
        } finally {
          await destination.close();
        }
      } finally {
        await source.close();
      }
    });
}

/** The source's sessions as export lines, counted as they go by. */
async function* exportLines(source: SessionDB, bar: SingleBar | null, seen: { sessions: number }): AsyncIterable<string> {
  for await (const session of source.exportAll() as AsyncIterable<SessionExport>) {
    seen.sessions++;
    bar?.increment();
    yield `${JSON.stringify(session)}\n`;
  }
}

async function copy(source: SessionDB, destination: SessionDB, names: { from: string; to: string }): Promise<CopyReport> {
  const before = { sessions: await destination.sessionCount(), messages: await destination.messageCount() };
  const total = await source.sessionCount();
  const bar = process.stderr.isTTY ? new SingleBar(
    { stream: process.stderr, format: "copying [{bar}] {value}/{total} sessions", hideCursor: true, etaBuffer: 50 },
    Presets.shades_classic,
  ) : null;
  bar?.start(total, 0);
  const seen = { sessions: 0 };
  let result: Awaited<ReturnType<typeof importSessions>>;
  try {
    result = await importSessions(destination, Readable.from(exportLines(source, bar, seen)));
  } finally {
    bar?.stop();
  }
  const { summary, failure } = result;
  if (failure !== null) {
    throw new SessionDBError(
      failure.error.code,
      `session ${failure.line} of the source: ${failure.error.message}; copy stopped after ${plural(summary.imported, "session")} (run it again to go on)`,
    );
  }
  const after = { sessions: await destination.sessionCount(), messages: await destination.messageCount() };
  const problems: string[] = [];
  if (summary.imported + summary.skipped !== seen.sessions) {
    problems.push(`${seen.sessions} sessions read but ${summary.imported + summary.skipped} copied or present`);
  }
  if (after.sessions - before.sessions !== summary.imported) {
    problems.push(`the destination gained ${after.sessions - before.sessions} sessions, not ${summary.imported}`);
  }
  if (after.messages - before.messages !== summary.messages) {
    problems.push(`the destination gained ${after.messages - before.messages} messages, not ${summary.messages}`);
  }
  if (problems.length > 0) throw new SessionDBError("INTERNAL", `copy could not be verified: ${problems.join("; ")} (another writer?)`);
  return {
    from: names.from, to: names.to, sessions: seen.sessions, copied: summary.imported, skipped: summary.skipped, messages: summary.messages, verified: true,
  };
}

import { open } from "node:fs/promises";
import type { Readable } from "node:stream";
import type { Command } from "commander";
import { SessionDBError } from "../../errors.js";
import { CliError } from "../cli-error.js";
import { plural } from "../format.js";
import { importSessions, type ImportSummary } from "../import-sessions.js";
import { withStore } from "../open-store.js";
import type { Output } from "../output.js";

export function registerImport(program: Command): void {
  program
    .command("import")
    .description("restore sessions from JSONL written by export (one transaction per session; existing ids are skipped)")
    .argument("<file>", "the JSONL file, or - for stdin")
    .action(async (file: string, _opts: unknown, command: Command) => {
      const input = await openInput(file);
      try {
        await withStore(command, { mustExist: false }, async ({ db, daemon }, out) => {
          const { summary, failure } = await importSessions(db, input);
          if (failure !== null) {
            // The client refuses a request over the frame limit before sending it; the daemon, one it is sent.
            const tooLarge = daemon !== null && (failure.error.code === "FRAME_TOO_LARGE" || /\bframe\b/.test(failure.error.message));
            const hint = tooLarge ? "; a session this large imports with --direct (sessiondb --direct import FILE)" : "";
            throw new SessionDBError(
              failure.error.code,
              `line ${failure.line}: ${failure.error.message}${hint}; import stopped: nothing of line ${failure.line} ` +
                `imported, ${plural(summary.imported, "session")} imported in all`,
            );
          }
          out.result(summary, () => printSummary(out, summary));
        });
      } finally {
        input.destroy();
      }
    });
}

async function openInput(file: string): Promise<Readable> {
  if (file === "-") return process.stdin;
  try {
    return (await open(file, "r")).createReadStream();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOENT") throw new CliError("NOT_FOUND", `no file ${file} to import`);
    throw new SessionDBError("IO", `cannot read ${file}: ${(err as Error).message}`);
  }
}

function printSummary(out: Output, s: ImportSummary): void {
  const ids = (list: string[]) => list.slice(0, 10).map((id) => JSON.stringify(id)).join(", ") + (list.length > 10 ? ", …" : "");
  let line = `imported ${plural(s.imported, "session")} (${plural(s.messages, "message")})`;
  line += s.skipped > 0 ? `, skipped ${s.skipped} already present: ${ids(s.skippedIds)}` : ", skipped 0";
  out.line(line);
  if (s.detachedIds.length > 0) {
    const detached = plural(s.detachedIds.length, "session");
    out.line(`${detached} imported without a parent (not in the file nor the database): ${ids(s.detachedIds)}`);
  }
  if (s.renumberedIds.length > 0) {
    out.line(`${plural(s.renumberedIds.length, "session")} got new message ids (theirs were taken): ${ids(s.renumberedIds)}`);
  }
}

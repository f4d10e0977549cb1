import type { Command } from "commander";
import { sanitizeTitle } from "../../operations/title-sanitizer.js";
import { CliError, UsageError } from "../cli-error.js";
import { oneLine } from "../format.js";
import { withStore } from "../open-store.js";
import { resolveSession } from "../resolve-session.js";

export function registerTitle(program: Command): void {
  program
    .command("title")
    .description("show a session's title, or set it (cleaned, unique, at most 100 characters), or --clear it")
    .argument("<session>", "an id, a unique id prefix, or a title")
    .argument("[title...]", "the new title (several words are joined with spaces)")
    .option("--clear", "remove the title")
    .action(async (ref: string, words: string[], opts: { clear?: boolean }, command: Command) => {
      const wanted = words.length > 0 ? words.join(" ") : null;
      if (wanted !== null && opts.clear) throw new UsageError("give either TITLE or --clear, not both");
      if (wanted !== null && sanitizeTitle(wanted) === null) {
        throw new UsageError("the title is empty once cleaned; use --clear to remove a title");
      }
      await withStore(command, { mustExist: true }, async ({ db }, out) => {
        const id = await resolveSession(db, ref);
        if (wanted !== null || opts.clear) {
          if (!(await db.setSessionTitle(id, wanted))) {
            throw new CliError("NOT_FOUND", `session ${JSON.stringify(id)} was deleted meanwhile`);
          }
        }
        const title = await db.getSessionTitle(id);
        out.result({ id, title }, () => {
          if (wanted !== null) out.line(`title of ${oneLine(id)} set to ${JSON.stringify(title)}`);
          else if (opts.clear) out.line(`title of ${oneLine(id)} cleared`);
          else out.line(title === null ? out.c.dim("(no title)") : oneLine(title));
        });
      });
    });
}

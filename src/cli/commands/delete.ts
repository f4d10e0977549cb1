import type { Command } from "commander";
import { CliError } from "../cli-error.js";
import { confirm } from "../confirm.js";
import { localTime, oneLine, plural } from "../format.js";
import { withStore } from "../open-store.js";
import { resolveSessionHow } from "../resolve-session.js";

export function registerDelete(program: Command): void {
  program
    .command("delete")
    .summary("delete a session and its messages (its child sessions stay, without a parent)")
    .description(
      "delete a session and its messages (its child sessions stay, without a parent); a title that leads to a " +
        "newer '<title> #N' continuation is shown before asking, and with --yes needs the id or the exact title",
    )
    .argument("<session>", "an id, a unique id prefix, or a title")
    .option("-y, --yes", "do not ask for confirmation (required when stdin is not a terminal)")
    .action(async (ref: string, opts: { yes?: boolean }, command: Command) => {
      await withStore(command, { mustExist: true }, async ({ db }, out) => {
        const { id, by } = await resolveSessionHow(db, ref);
        const session = await db.getSession(id);
        const title = session?.title ? ` "${oneLine(session.title)}"` : "";
        const what = `session ${oneLine(id)}${title} (${plural(session?.message_count ?? 0, "message")})`;
        if (by === "lineage") {
          const picked = `${JSON.stringify(ref)} led to its newest continuation: ${what}` +
            (session ? `, started ${localTime(session.started_at)}` : "");
          if (opts.yes) {
            throw new CliError("AMBIGUOUS", `${picked}; with --yes give its id or its exact title (nothing was deleted)`);
          }
          process.stderr.write(`${picked}\n`);
        }
        await confirm("delete", `Delete ${what}?`, opts.yes === true);
        const deleted = (await db.deleteSession(id)) ? 1 : 0;
        out.result({ deleted }, () => out.line(deleted === 1 ? `deleted ${what}` : `nothing deleted: ${oneLine(id)} was already gone`));
      });
    });
}

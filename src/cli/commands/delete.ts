import type { Command } from "commander";
import { confirm } from "../confirm.js";
import { oneLine, plural } from "../format.js";
import { withStore } from "../open-store.js";
import { resolveSession } from "../resolve-session.js";

export function registerDelete(program: Command): void {
  program
    .command("delete")
    .description("delete a session and its messages (its child sessions stay, without a parent)")
    .argument("<session>", "an id, a unique id prefix, or a title")
    .option("-y, --yes", "do not ask for confirmation (required when stdin is not a terminal)")
    .action(async (ref: string, opts: { yes?: boolean }, command: Command) => {
      await withStore(command, { mustExist: true }, async ({ db }, out) => {
        const id = await resolveSession(db, ref);
        const session = await db.getSession(id);
        const title = session?.title ? ` "${oneLine(session.title)}"` : "";
        const what = `session ${oneLine(id)}${title} (${plural(session?.message_count ?? 0, "message")})`;
        await confirm("delete", `Delete ${what}?`, opts.yes === true);
        const deleted = (await db.deleteSession(id)) ? 1 : 0;
        out.result({ deleted }, () => out.line(deleted === 1 ? `deleted ${what}` : `nothing deleted: ${oneLine(id)} was already gone`));
      });
    });
}

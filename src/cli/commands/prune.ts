import type { Command } from "commander";
import { nonNegativeNumber } from "../arguments.js";
import { confirm } from "../confirm.js";
import { oneLine, plural } from "../format.js";
import { withStore } from "../open-store.js";

export function registerPrune(program: Command): void {
  program
    .command("prune")
    .description("delete ended sessions started more than DAYS ago, with their messages (active sessions never)")
    .option("--older-than <days>", "age in days", nonNegativeNumber, 90)
    .option("--source <source>", "only this source")
    .option("-y, --yes", "do not ask for confirmation (required when stdin is not a terminal)")
    .action(async (opts: { olderThan: number; source?: string; yes?: boolean }, command: Command) => {
      await withStore(command, { mustExist: true }, async ({ db }, out) => {
        const of = opts.source === undefined ? "" : ` of source ${oneLine(opts.source)}`;
        const scope = `every ended session${of} started more than ${plural(opts.olderThan, "day")} ago`;
        await confirm("prune", `Delete ${scope}, with its messages?`, opts.yes === true);
        const deleted = await db.pruneSessions({ olderThanDays: opts.olderThan, source: opts.source ?? null });
        out.result({ deleted }, () => out.line(`pruned ${plural(deleted, "session")} (${scope})`));
      });
    });
}

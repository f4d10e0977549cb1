import type { Command } from "commander";
import { nonNegativeNumber } from "../arguments.js";
import { confirm } from "../confirm.js";
import { localTime, oneLine, plural } from "../format.js";
import { withStore } from "../open-store.js";
import type { Output } from "../output.js";
import { prunePlan, type PrunePlan } from "../prune-plan.js";

interface PruneCliOptions {
  olderThan: number;
  source?: string;
  yes?: boolean;
  dryRun?: boolean;
}

export function registerPrune(program: Command): void {
  program
    .command("prune")
    .description("delete ended sessions started more than DAYS ago, with their messages (active sessions never)")
    .option("--older-than <days>", "age in days", nonNegativeNumber, 90)
    .option("--source <source>", "only this source")
    .option("--dry-run", "list what would be deleted, with counts, and delete nothing")
    .option("-y, --yes", "do not ask for confirmation (required when stdin is not a terminal)")
    .action(async (opts: PruneCliOptions, command: Command) => {
      await withStore(command, { mustExist: true }, async ({ db }, out) => {
        const of = opts.source === undefined ? "" : ` of source ${oneLine(opts.source)}`;
        const scope = `ended sessions${of} started more than ${plural(opts.olderThan, "day")} ago`;
        const plan = await prunePlan(db, opts.olderThan, opts.source ?? null);
        const counts = `${plural(plan.sessions.length, "session")} (${plural(plan.messages, "message")})`;
        if (opts.dryRun) {
          const report = { dryRun: true, wouldDelete: plan.sessions.length, messages: plan.messages, sessions: plan.sessions };
          out.result(report, () => printPlan(out, plan, `would prune ${counts}: ${scope}; nothing was deleted`));
          return;
        }
        if (plan.sessions.length > 0) await confirm("prune", `Delete ${counts}, the ${scope}?`, opts.yes === true);
        const deleted = plan.sessions.length === 0 ? 0 : await db.pruneSessions({ olderThanDays: opts.olderThan, source: opts.source ?? null });
        out.result({ deleted }, () => out.line(`pruned ${plural(deleted, "session")} (${scope})`));
      });
    });
}

function printPlan(out: Output, plan: PrunePlan, summary: string): void {
  const { c } = out;
  for (const s of plan.sessions) {
    const title = s.title === null ? "" : `  "${oneLine(s.title)}"`;
    out.line(`${oneLine(s.id)}${title}  ${c.dim(`${oneLine(s.source)} · started ${localTime(s.started_at)} · ${plural(s.message_count, "message")}`)}`);
  }
  out.line(summary);
}

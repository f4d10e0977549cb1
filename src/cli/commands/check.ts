import type { Command } from "commander";
import { SessionDBError } from "../../errors.js";
import type { IntegrityReport } from "../../sqlite/integrity-check.js";
import { checkDirect } from "../../direct/direct-maintenance.js";
import { plural } from "../format.js";
import { withMaintenanceTarget } from "../maintenance-target.js";
import type { Output } from "../output.js";

/** `--json` of `check`: the report, and where it ran. */
export interface CheckReport extends IntegrityReport {
  database: string;
  via: "daemon" | "direct";
}

export function registerCheck(program: Command): void {
  program
    .command("check")
    .description(
      "integrity_check (quick_check with --quick) and the full-text and CJK indexes' own checks, on one snapshot " +
        "(a reader thread of the daemon when one serves: writes go on meanwhile); exit 1 when anything is wrong",
    )
    .option("--quick", "quick_check, and no comparison of the full-text index with the messages")
    .action(async (opts: { quick?: boolean }, command: Command) => {
      await withMaintenanceTarget(command, async ({ path, postgres, daemon, out }) => {
        if (postgres) throw new SessionDBError("INVALID_ARGUMENT", "check is for SQLite files; for PostgreSQL use its amcheck extension");
        const quick = opts.quick === true;
        const result = daemon === null ? checkDirect(path, quick) : await daemon.daemon.check({ quick });
        const report: CheckReport = { database: path, via: daemon === null ? "direct" : "daemon", ...result };
        out.result(report, () => {
          out.line(`${report.ok ? "ok" : "FAILED"}  ${path} (${quick ? "quick_check" : "integrity_check"}, ${report.via === "daemon" ? "on a reader of the daemon" : "directly"})`);
          printCounts(out, report);
          printIndexes(out, report);
        });
        if (!report.ok) throw new SessionDBError("CORRUPT", `${path} failed its check: ${problemsOf(report).slice(0, 3).join("; ")}`);
      });
    });
}

/** Every problem found, the indexes' included. */
export function problemsOf(report: IntegrityReport): string[] {
  return [...report.problems, ...report.fts.problems, ...report.cjk.problems];
}

export function printCounts(out: Output, report: IntegrityReport): void {
  if (report.sessions === null || report.messages === null) out.line("  sessions and messages: too damaged to count");
  else out.line(`  ${plural(report.sessions, "session")}, ${plural(report.messages, "message")}`);
}

/** The lines of a report about SQLite's own check and the two indexes. */
export function printIndexes(out: Output, report: IntegrityReport): void {
  for (const problem of report.problems) out.line(`  ${problem}`);
  const index = (name: string, r: IntegrityReport["fts"], what: string) => {
    if (!r.present) out.line(`  ${name}: none`);
    else out.line(`  ${name}: ${r.ok ? `ok (${what})` : "FAILED"}`);
    for (const problem of r.problems) out.line(`    ${problem}`);
  };
  index("full-text index", report.fts, report.ftsContent ? "structure, and it indexes exactly the messages" : "structure");
  index("CJK index", report.cjk, "structure and state");
}

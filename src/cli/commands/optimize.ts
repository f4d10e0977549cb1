import type { Command } from "commander";
import { SessionDBError } from "../../errors.js";
import { optimizeDirect } from "../../direct/direct-maintenance.js";
import type { OptimizeResult } from "../../protocol/control.js";
import { size } from "../format.js";
import { withMaintenanceTarget } from "../maintenance-target.js";

/** `--json` of `optimize`. */
export interface OptimizeReport extends OptimizeResult {
  database: string;
  via: "daemon" | "direct";
}

export function registerOptimize(program: Command): void {
  program
    .command("optimize")
    .description(
      "merge the full-text and CJK indexes' segments in short steps between the daemon's batches (none holds the lock more than a few ms); " +
        "with --vacuum then VACUUM and report the disk space returned",
    )
    .option("--vacuum", "then VACUUM: returns deleted rows' space to the disk, but holds every write until done")
    .option("--force", "VACUUM even while other clients are connected to the daemon (their writes wait)")
    .action(async (opts: { vacuum?: boolean; force?: boolean }, command: Command) => {
      await withMaintenanceTarget(command, async ({ path, postgres, daemon, out }) => {
        if (postgres) throw new SessionDBError("INVALID_ARGUMENT", "optimize is for SQLite files; PostgreSQL has its own VACUUM and REINDEX");
        const vacuum = opts.vacuum === true;
        const result = daemon === null ? optimizeDirect(path, vacuum) : await daemon.daemon.optimize({ vacuum, force: opts.force === true });
        const report: OptimizeReport = { database: path, via: daemon === null ? "direct" : "daemon", ...result };
        out.result(report, () => {
          const merged = report.indexes.length === 0 ? "no search index to merge" : `merged ${report.indexes.join(" and ")} in ${report.steps} steps (longest ${report.maxStepMs.toFixed(1)} ms)`;
          out.line(`${merged}${report.via === "daemon" ? ", between the daemon's batches" : ""}`);
          if (report.vacuumed) out.line(`vacuumed: ${size(report.bytesBefore)} → ${size(report.bytesAfter)}, ${size(report.bytesReturned)} returned to the disk`);
          else out.line(`${size(report.bytesAfter)} on disk (give --vacuum to return free pages to the disk)`);
        });
      });
    });
}

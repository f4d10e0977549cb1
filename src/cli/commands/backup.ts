import { Presets, SingleBar } from "cli-progress";
import type { Command } from "commander";
import { SessionDBError } from "../../errors.js";
import { backupToFile } from "../backup-file.js";
import { plural, size } from "../format.js";
import { withMaintenanceTarget } from "../maintenance-target.js";

export function registerBackup(program: Command): void {
  program
    .command("backup")
    .description(
      "copy the database to DEST online and consistently (through the daemon's writer between its batches when one serves, else directly), " +
        "check the copy (integrity_check, counts against the source's), fsync it and only then rename it to DEST",
    )
    .argument("<dest>", "the backup file (replaced whole, only by a checked copy), or a directory to put it in under the database's name")
    .action(async (dest: string, _opts: unknown, command: Command) => {
      await withMaintenanceTarget(command, async (target) => {
        if (target.postgres) {
          throw new SessionDBError(
            "INVALID_ARGUMENT",
            "backup copies SQLite files; for PostgreSQL use pg_dump (or `sessiondb export -o FILE` for the portable JSONL, which `sessiondb import` restores)",
          );
        }
        const bar = process.stderr.isTTY ? progressBar() : null;
        const report = await backupToFile(target, dest, bar === null ? null : (f) => bar.update(Math.round(f * 100))).finally(() => bar?.stop());
        target.out.result(report, () =>
          target.out.line(
            `backed up ${plural(report.sessions, "session")} (${plural(report.messages, "message")}, ${size(report.bytes)}) to ${report.file}: ` +
              `integrity ok, counts match, in ${report.seconds.toFixed(1)} s (${report.via === "daemon" ? "through the daemon" : "directly"})`,
          ),
        );
      });
    });
}

function progressBar(): SingleBar {
  const bar = new SingleBar(
    { stream: process.stderr, format: "backing up [{bar}] {percentage}%", hideCursor: true },
    Presets.shades_classic,
  );
  bar.start(100, 0);
  return bar;
}


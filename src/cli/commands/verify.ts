import { resolve } from "node:path";
import { checkRegularFile } from "../../regular-file.js";
import type { Command } from "commander";
import { SessionDBError } from "../../errors.js";
import { verifyCopy, type CopyReport } from "../../sqlite/verify-copy.js";
import { size } from "../format.js";
import { globalsOf } from "../open-store.js";
import { Output } from "../output.js";
import { printCounts, printIndexes, problemsOf } from "./check.js";

export function registerVerify(program: Command): void {
  program
    .command("verify")
    .description("check a copy of a database as `backup` checks its own: a Hermes file, integrity_check, counts (exit 1 when it fails)")
    .argument("<file>", "the copy to check (opened read-only)")
    .action((file: string, _opts: unknown, command: Command) => {
      const out = new Output(globalsOf(command).json === true);
      const path = resolve(file);
      checkRegularFile(path);
      const report: CopyReport = verifyCopy(path);
      out.result(report, () => {
        out.line(`${report.ok ? "ok" : "FAILED"}  ${path}: schema version ${report.schemaVersion ?? "none"}, ${size(report.bytes)}`);
        printCounts(out, report);
        printIndexes(out, report);
      });
      if (!report.ok) throw new SessionDBError("CORRUPT", `${path} failed its check: ${problemsOf(report).slice(0, 3).join("; ")}`);
    });
}

import type { Command } from "commander";
import { SessionDBError, toSessionDBError, type ErrorCode } from "../../errors.js";
import { openWithoutReplay } from "../../open.js";
import { defaultSpoolDir, SpoolFile, type SpoolListing } from "../../spool/spool-file.js";
import { applyBy, replaySpool } from "../../spool/spool-replay.js";
import { localTime, plural, size } from "../format.js";
import { globalsOf, openOptions, type GlobalOptions } from "../open-store.js";
import { Output } from "../output.js";

/** `--json` of `spool`: one entry per spool file with records pending (or that could not be read). */
export interface SpoolReport {
  /** The database the records are for (a file's real path, a PostgreSQL URL's identity); "" when unreadable. */
  database: string;
  file: string;
  pending: number;
  /** When the oldest pending record's call was made, in seconds since the epoch; null when none. */
  oldest: number | null;
  bytes: number;
  /** Why the file could not be read (another user's, one others may write); null when it was. */
  error: { code: ErrorCode; message: string } | null;
}

/** `--json` of `spool replay`: one entry per database with records pending. */
export interface ReplayReport {
  database: string;
  file: string;
  applied: number;
  /** Records the store refused for good (a conflict, a constraint): acknowledged and dropped. */
  refused: Array<{ key: string; op: string; code: ErrorCode; message: string }>;
  /** Records still pending (the store cannot take them yet). */
  left: number;
  /** Why the replay stopped; null when nothing is left. */
  error: { code: ErrorCode; message: string } | null;
}

interface SpoolOptions {
  dir?: string;
}

export function registerSpool(program: Command): void {
  const spool = program
    .command("spool")
    .description("list this user's pending spooled writes (per database: how many, the oldest, the file's size); `spool replay` applies them")
    .option("--dir <dir>", "the spool folder (default: $XDG_STATE_HOME/sessiondb/spool, else ~/.local/state/sessiondb/spool)")
    .action(async (opts: SpoolOptions, command: Command) => {
      const globals = globalsOf(command);
      const out = new Output(globals.json === true);
      const reports = (await pendingSpools(opts)).map(spoolReport);
      out.result(reports, () => printSpools(out, reports));
      const unreadable = reports.find((r) => r.error !== null);
      if (unreadable?.error) throw new SessionDBError(unreadable.error.code, unreadable.error.message);
    });

  spool
    .command("replay")
    .description("apply this user's pending spooled writes, every database's, in order, each once (by its key), through the daemon when one serves the database, else directly")
    .action(async (_opts: unknown, command: Command) => {
      const globals = globalsOf(command);
      const out = new Output(globals.json === true);
      const reports: ReplayReport[] = [];
      for (const listing of await pendingSpools(command.optsWithGlobals<SpoolOptions>())) {
        if (listing.error !== null) {
          reports.push({ database: "", file: listing.file.path, applied: 0, refused: [], left: 0, error: { code: listing.error.code, message: listing.error.message } });
          continue;
        }
        reports.push(await replayOne(listing.file, globals));
      }
      out.result(reports, () => printReplays(out, reports));
      const failed = reports.find((r) => r.error !== null);
      if (failed?.error) throw new SessionDBError(failed.error.code, `${failed.database || failed.file}: ${failed.error.message}`);
    });
}

/** The spool files with records pending (or unreadable), whichever database they are for. */
async function pendingSpools(opts: SpoolOptions): Promise<SpoolListing[]> {
  return (await SpoolFile.list(opts.dir ?? defaultSpoolDir())).filter((l) => l.error !== null || l.pending.length > 0);
}

function spoolReport(l: SpoolListing): SpoolReport {
  return {
    database: l.file.identity,
    file: l.file.path,
    pending: l.pending.length,
    oldest: l.pending.length === 0 ? null : Math.min(...l.pending.map((r) => r.ts)),
    bytes: l.size,
    error: l.error === null ? null : { code: l.error.code, message: l.error.message },
  };
}

/** Opens the records' database as the other commands would (`--direct` too) and replays the file through it. */
async function replayOne(file: SpoolFile, globals: GlobalOptions): Promise<ReplayReport> {
  const report: ReplayReport = { database: file.identity, file: file.path, applied: 0, refused: [], left: 0, error: null };
  try {
    const db = await openWithoutReplay(openOptions({ ...globals, db: file.identity }, { create: false }));
    try {
      const result = await replaySpool(file, applyBy(db));
      report.applied = result.applied;
      report.refused = result.refused;
    } finally {
      await db.close();
    }
  } catch (err) {
    const e = toSessionDBError(err);
    report.error = { code: e.code, message: e.message };
  }
  report.left = (await file.pending().catch(() => [])).length;
  return report;
}

function printSpools(out: Output, reports: readonly SpoolReport[]): void {
  if (reports.length === 0) {
    out.line(out.c.dim("no pending spooled writes"));
    return;
  }
  for (const r of reports) {
    if (r.error !== null) out.line(`${r.file}: ${out.c.yellow(`${r.error.code}: ${r.error.message}`)} (${size(r.bytes)})`);
    else out.line(`${r.database}: ${r.pending} pending, oldest ${r.oldest === null ? "-" : localTime(r.oldest, true)}, ${size(r.bytes)} (${r.file})`);
  }
}

function printReplays(out: Output, reports: readonly ReplayReport[]): void {
  if (reports.length === 0) {
    out.line(out.c.dim("no pending spooled writes"));
    return;
  }
  for (const r of reports) {
    const name = r.database || r.file;
    const dropped = r.refused.length > 0 ? `, dropped ${r.refused.length} refused for good (${r.refused.map((x) => `${x.op} ${x.code}: ${x.message}`).join("; ")})` : "";
    const left = r.left > 0 ? `; ${plural(r.left, "write")} left` : "";
    const why = r.error !== null ? ` (${r.error.code}: ${r.error.message})` : "";
    out.line(`${name}: applied ${plural(r.applied, "write")}${dropped}${left}${why}`);
  }
}

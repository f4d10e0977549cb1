import type { Command } from "commander";
import type { RichSessionRow } from "../../session-db.js";
import { collect, limit, nonNegativeInt } from "../arguments.js";
import { ago, localTime, oneLine } from "../format.js";
import { withStore } from "../open-store.js";
import type { Output } from "../output.js";

interface ListOptions {
  source?: string;
  excludeSource?: string[];
  limit: number;
  offset: number;
  children?: boolean;
}

export function registerList(program: Command): void {
  program
    .command("list")
    .description("list sessions, newest first (a compressed conversation shows as its latest part)")
    .option("--source <source>", "only this source")
    .option("--exclude-source <source>", "not this source (repeatable)", collect)
    .option("--limit <n>", "at most this many", limit, 20)
    .option("--offset <n>", "skip this many", nonNegativeInt, 0)
    .option("--children", "include child sessions (delegations, compression continuations)")
    .action(async (opts: ListOptions, command: Command) => {
      await withStore(command, { mustExist: true }, async ({ db }, out) => {
        const rows = await db.listSessionsRich({
          source: opts.source ?? null,
          excludeSources: opts.excludeSource ?? null,
          limit: opts.limit,
          offset: opts.offset,
          includeChildren: opts.children === true,
        });
        out.result(rows, () => printList(out, rows, opts));
      });
    });
}

const HEAD = ["ID", "TITLE", "SOURCE", "STARTED", "ACTIVE", "MSGS", "PREVIEW"];

/** Column widths that fill the terminal: the preview takes what the others leave. */
function columnWidths(rows: RichSessionRow[], width: number): number[] {
  const longest = (values: string[], min: number, max: number) =>
    Math.min(max, Math.max(min, ...values.map((v) => [...v].length)));
  let id = longest(rows.map((r) => r.id), 2, 36);
  let title = longest(rows.map((r) => r.title ?? ""), 5, 30);
  const source = longest(rows.map((r) => r.source), 6, 12);
  const fixed = [16, 10, longest(rows.map((r) => String(r.message_count)), 4, 8)];
  const rest = () => width - (id + title + source + fixed.reduce((a, b) => a + b, 0)) - HEAD.length + 1;
  // Too narrow: shorten the title, then the id (a prefix still names the session); only a very
  // narrow terminal gets lines wider than itself.
  while (rest() < 20 && title > 8) title--;
  while (rest() < 20 && id > 8) id--;
  return [id, title, source, ...fixed, Math.max(5, rest())];
}

function printList(out: Output, rows: RichSessionRow[], opts: ListOptions): void {
  if (rows.length === 0) {
    out.line(opts.offset > 0 ? "no more sessions" : "no sessions");
    return;
  }
  const { c } = out;
  const now = Date.now() / 1000;
  out.table(
    HEAD,
    columnWidths(rows, out.width),
    rows.map((r) => [
      oneLine(r.id),
      r.title === null ? c.dim("-") : oneLine(r.title),
      oneLine(r.source),
      localTime(r.started_at),
      ago(r.last_active, now),
      String(r.message_count),
      oneLine(r.preview),
    ]),
  );
  if (rows.length === opts.limit) out.line(c.dim(`more may follow: --offset ${opts.offset + rows.length}`));
}

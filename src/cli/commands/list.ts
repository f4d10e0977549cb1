import type { Command } from "commander";
import type { RichSessionRow, SessionDB } from "../../session-db.js";
import { collect, limit, nonNegativeInt } from "../arguments.js";
import { ago, localTime, oneLine } from "../format.js";
import { withStore } from "../open-store.js";
import type { Output } from "../output.js";
import { cutMiddle, displayWidth, layoutColumns } from "../table-layout.js";
import { shortestUniquePrefix } from "../unique-prefix.js";

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
    .summary("list sessions, newest first (a compressed conversation shows as its latest part)")
    .description(
      "list sessions, newest first (a compressed conversation shows as its latest part): on a terminal a table " +
        "fitted to its width ($COLUMNS overrides it) with ids shortened to their shortest unique prefix when needed; " +
        "piped, tab-separated lines, never cut",
    )
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
        if (out.json) out.printJson(rows);
        else await printList(db, out, rows, opts);
      });
    });
}

/** The columns in the order shown. */
const HEAD = ["ID", "TITLE", "SOURCE", "STARTED", "ACTIVE", "MSGS", "PREVIEW"] as const;
type Column = (typeof HEAD)[number];
/** A title longer than this is cut in the middle even on a wide terminal. */
const TITLE_MAX = 40;

const longest = (values: string[], header: string) => Math.max(displayWidth(header), ...values.map(displayWidth));

/** The cells of each row, uncut (the id given as it will be shown). */
function cellsOf(r: RichSessionRow, id: string, now: number): Record<Column, string> {
  return {
    ID: id,
    TITLE: r.title === null ? "-" : oneLine(r.title),
    SOURCE: oneLine(r.source),
    STARTED: localTime(r.started_at),
    ACTIVE: ago(r.last_active, now),
    MSGS: String(r.message_count),
    PREVIEW: oneLine(r.preview),
  };
}

/**
 * Column widths at `width`: the id and the title always; then, while they fit, activity, count,
 * source, a preview (which takes what is left) and the start time. Ids are shown whole when that
 * costs nothing else, else as their shortest unique prefix.
 */
function fitColumns(rows: Record<Column, string>[], idWidth: number, width: number): Map<string, number> {
  const want = (column: Column) => longest(rows.map((r) => r[column]), column);
  return layoutColumns(
    [
      { name: "ID", want: idWidth, required: true },
      { name: "TITLE", want: Math.min(TITLE_MAX, want("TITLE")), required: true, min: Math.min(8, want("TITLE")) },
      { name: "ACTIVE", want: want("ACTIVE") },
      { name: "MSGS", want: want("MSGS") },
      { name: "SOURCE", want: Math.min(16, want("SOURCE")) },
      { name: "PREVIEW", want: want("PREVIEW"), flexible: true, min: Math.min(12, want("PREVIEW")) },
      { name: "STARTED", want: want("STARTED") },
    ],
    width,
  );
}

async function printList(db: SessionDB, out: Output, rows: RichSessionRow[], opts: ListOptions): Promise<void> {
  if (rows.length === 0) {
    out.line(opts.offset > 0 ? "no more sessions" : "no sessions");
    return;
  }
  const now = Date.now() / 1000;
  if (!out.terminal) {
    out.tsv([...HEAD], rows.map((r) => HEAD.map((column) => cellsOf(r, oneLine(r.id), now)[column])));
  } else {
    printTable(out, rows, await Promise.all(rows.map((r) => shortestUniquePrefix(db, r.id))), now);
  }
  if (rows.length === opts.limit) out.note(`more may follow: --offset ${opts.offset + rows.length}`);
}

function printTable(out: Output, rows: RichSessionRow[], prefixes: string[], now: number): void {
  const whole = rows.map((r) => cellsOf(r, oneLine(r.id), now));
  const short = rows.map((r, i) => cellsOf(r, oneLine(prefixes[i]!), now));
  const wholeLayout = fitColumns(whole, longest(whole.map((c) => c.ID), "ID"), out.width);
  const shortLayout = fitColumns(short, longest(short.map((c) => c.ID), "ID"), out.width);
  const same = [...shortLayout].every(([name, w]) => name === "ID" || name === "PREVIEW" || wholeLayout.get(name) === w);
  const [cells, widths] = same && wholeLayout.size === shortLayout.size ? [whole, wholeLayout] : [short, shortLayout];
  const shown = HEAD.filter((column) => widths.has(column));
  out.table(
    [...shown],
    shown.map((column) => widths.get(column)!),
    cells.map((row, i) =>
      shown.map((column) => {
        if (column === "TITLE") return rows[i]!.title === null ? out.c.dim("-") : cutMiddle(row.TITLE, widths.get("TITLE")!);
        return row[column];
      }),
    ),
  );
}

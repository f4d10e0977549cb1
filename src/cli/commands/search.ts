import type { Command } from "commander";
import type { SearchHit, SessionDB } from "../../session-db.js";
import { collect, limit, nonNegativeInt } from "../arguments.js";
import { localTime, oneLine, printable } from "../format.js";
import { withStore } from "../open-store.js";
import type { Output } from "../output.js";
import { explainQuery } from "../query-explanation.js";

interface SearchCliOptions {
  source?: string[];
  excludeSource?: string[];
  role?: string[];
  limit: number;
  offset: number;
  verbose?: boolean;
}

export function registerSearch(program: Command): void {
  program
    .command("search")
    .description("full-text search of message content (FTS5; CJK text by substring)")
    .argument("<query>", 'words, "a phrase", prefix*; operators are tamed, never an error')
    .option("--source <source>", "only this source (repeatable)", collect)
    .option("--exclude-source <source>", "not this source (repeatable)", collect)
    .option("--role <role>", "only messages of this role (repeatable)", collect)
    .option("--limit <n>", "at most this many hits", limit, 20)
    .option("--offset <n>", "skip this many hits", nonNegativeInt, 0)
    .option("-v, --verbose", "say on stderr what was searched, and why, when the query was rewritten (NOT x, -x, a-b …)")
    .action(async (query: string, opts: SearchCliOptions, command: Command) => {
      await withStore(command, { mustExist: true }, async ({ db }, out) => {
        if (opts.verbose) for (const line of explainQuery(query)) process.stderr.write(`${printable(line)}\n`);
        const hits = await db.searchMessages(query, {
          sourceFilter: opts.source ?? null,
          excludeSources: opts.excludeSource ?? null,
          roleFilter: opts.role ?? null,
          limit: opts.limit,
          offset: opts.offset,
        });
        if (out.json) out.printJson(hits);
        else printHits(out, hits, await titlesOf(db, hits), opts);
      });
    });
}

async function titlesOf(db: SessionDB, hits: SearchHit[]): Promise<Map<string, string | null>> {
  const titles = new Map<string, string | null>();
  for (const hit of hits) if (!titles.has(hit.session_id)) titles.set(hit.session_id, await db.getSessionTitle(hit.session_id));
  return titles;
}

/**
 * The match markers: on a color terminal the `>>>match<<<` becomes bold yellow; otherwise the
 * markers stay, so piped output still shows (and lets tools find) what matched.
 */
function highlight(out: Output, snippet: string): string {
  const text = oneLine(snippet);
  if (!out.colorEnabled) return text;
  return text.replace(/>>>(.*?)<<</g, (_m, match: string) => out.c.bold(out.c.yellow(match)));
}

function printHits(out: Output, hits: SearchHit[], titles: Map<string, string | null>, opts: SearchCliOptions): void {
  const { c } = out;
  if (hits.length === 0) {
    out.line(opts.offset > 0 ? "no more matches" : "no matches");
    return;
  }
  for (const hit of hits) {
    const title = titles.get(hit.session_id);
    const where = [c.bold(oneLine(hit.session_id))];
    if (title) where.push(`"${oneLine(title)}"`);
    const role = `${oneLine(hit.role)}${hit.tool_name ? ` (${oneLine(hit.tool_name)})` : ""}`;
    where.push(c.dim(`${role} · ${localTime(hit.timestamp)} · ${oneLine(hit.source)}`));
    out.line(where.join("  "));
    out.line(`  ${highlight(out, hit.snippet)}`);
  }
  if (hits.length === opts.limit) out.line(c.dim(`more may follow: --offset ${opts.offset + hits.length}`));
}

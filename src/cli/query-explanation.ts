/**
 * What `search --verbose` says about a query: what FTS5 was actually asked, and why it differs
 * from what was typed (the sanitizer tames FTS5's syntax so that no query is ever an error).
 */
import { containsCjk, sanitizeFtsQuery } from "../operations/fts-query.js";

const q = (text: string) => JSON.stringify(text);

/** Lines for people: the query searched and, when it was rewritten, each reason. */
export function explainQuery(query: string): string[] {
  const typed = query.trim();
  const searched = sanitizeFtsQuery(query);
  if (searched === "") {
    return [`searched nothing: ${q(typed)} holds only operators or punctuation once FTS5's syntax is taken out, so it matches nothing`];
  }
  const lines = [searched === typed ? `searched FTS5 for: ${searched} (as typed)` : `searched FTS5 for: ${searched} (rewritten from: ${typed})`];
  const unquoted = typed.replace(/"[^"]*"/g, " ");
  const leading = /^(AND|OR|NOT)\b/i.exec(typed)?.[1];
  if (leading !== undefined && !/^(AND|OR|NOT)\b/i.test(searched)) {
    const not = leading.toUpperCase() === "NOT"
      ? `: this finds messages WITH ${searched}; to leave words out, put them after the ones you want: "<words> NOT ${searched}"`
      : "";
    lines.push(`  a leading ${leading} was dropped (FTS5 cannot start with an operator)${not}`);
  }
  const trailing = /\s(AND|OR|NOT)$/i.exec(typed)?.[1];
  if (trailing !== undefined && !/\s(AND|OR|NOT)$/i.test(searched)) lines.push(`  a trailing ${trailing} was dropped (nothing follows it)`);
  for (const [, word] of searched.matchAll(/"([^"\s]*[.-][^"\s]*)"/g)) {
    if (!typed.includes(`"${word}"`)) {
      lines.push(`  ${word} is searched as a phrase: FTS5 splits words at "-" and ".", so it matches ${word!.split(/[.-]/).map(q).join(" then ")} next to each other`);
    }
  }
  const removed = [...new Set(unquoted.match(/[+{}()^]/g) ?? [])];
  if (removed.length > 0) lines.push(`  ${removed.join(" ")} mean nothing in a search and were removed`);
  if (/(^|\s)\*/.test(unquoted)) lines.push(`  a "*" only works at the end of a word (prefix*), so one at the start was removed`);
  for (const [, word] of searched.matchAll(/(?:^|\s)-([^\s"]+)/g)) {
    lines.push(
      `  -${word}: FTS5 reads a leading "-" as "not in column ${word}", and there is no such column, so this query matches ` +
        `nothing; to leave a word out, put it after the ones you want: "<words> NOT ${word}"`,
    );
  }
  if (containsCjk(searched)) lines.push("  it holds CJK text: when FTS5 finds nothing, the text is searched as a substring instead");
  return lines;
}

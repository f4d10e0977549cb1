/**
 * The query sanitizer and the CJK test of full-text search (SPEC §3.1): pure functions, apart
 * from the SQL so that the public types never need the database driver's.
 */

const WORD = "[\\p{L}\\p{N}_]";
// Placeholders for protected phrases use private-use characters, which are never word characters.
const PHRASE_OPEN = "\uE000";
const PHRASE_CLOSE = "\uE001";

/**
 * Turns what a person typed into a valid FTS5 query, in the six steps of SPEC §3.1: keep balanced
 * phrases, drop stray operators and quotes, tame `*`, drop dangling AND/OR/NOT, quote dotted and
 * hyphenated terms so the tokenizer keeps them together.
 */
export function sanitizeFtsQuery(query: string): string {
  const phrases: string[] = [];
  let s = query.replace(/[\uE000\uE001]/g, "");
  s = s.replace(/"[^"]*"/g, (phrase) => `${PHRASE_OPEN}${phrases.push(phrase) - 1}${PHRASE_CLOSE}`);
  s = s.replace(/[+{}()"^]/g, " ");
  s = s.replace(/\*+/g, "*").replace(/(^|\s)\*/gu, "$1");
  s = s.trim().replace(new RegExp(`^(AND|OR|NOT)(?!${WORD})\\s*`, "iu"), "");
  s = s.trim().replace(/\s+(AND|OR|NOT)\s*$/iu, "");
  s = s.replace(new RegExp(`(?<!${WORD})(${WORD}+(?:[.-]${WORD}+)+)(?!${WORD})`, "gu"), '"$1"');
  s = s.replace(new RegExp(`${PHRASE_OPEN}(\\d+)${PHRASE_CLOSE}`, "g"), (_, i: string) => phrases[Number(i)] ?? "");
  return s.trim();
}

const CJK = /[\u4E00-\u9FFF\u3400-\u4DBF\u{20000}-\u{2A6DF}\u3000-\u303F\u3040-\u309F\u30A0-\u30FF\uAC00-\uD7AF]/u;

/** True when the text has a Chinese, Japanese or Korean character (the ranges of SPEC §3.1). */
export function containsCjk(text: string): boolean {
  return CJK.test(text);
}

/**
 * The sanitized FTS5 query syntax (SPEC §3.1: barewords, "phrases", prefix `*`, AND/OR/NOT with
 * FTS5's precedence NOT > AND > OR, implicit AND) as a PostgreSQL `tsquery` text for
 * `to_tsquery('simple', …)`. Words split where FTS5's unicode61 tokenizer and our indexed text
 * split them (whitespace and ASCII punctuation), so a quoted `"chat-send"` is the phrase
 * `chat <-> send`. What FTS5 would reject as a syntax error gives null: the search finds nothing,
 * as on SQLite.
 */

/**
 * Whitespace, control characters, ASCII punctuation and `_`: where words split, in the query as
 * in the index (see pg-schema.ts, and PostgreSQL's parser, which skips control characters).
 */
const SEPARATORS = /[\s\u0000-\u001F\u007F!-/:-@[-`{-~]+/u;

type Token =
  | { type: "term"; text: string; prefix: boolean }
  | { type: "op"; op: "AND" | "OR" | "NOT" };

/** FTS5's bareword characters: ASCII letters, digits, `_`, U+001A, and anything non-ASCII. */
function isBareword(ch: string): boolean {
  return /[A-Za-z0-9_\u001A]/.test(ch) || ch.codePointAt(0)! > 0x7f;
}

function tokenize(query: string): Token[] | null {
  const tokens: Token[] = [];
  let i = 0;
  while (i < query.length) {
    const ch = query[i]!;
    if (/\s/.test(ch)) {
      i++;
    } else if (ch === '"') {
      const end = query.indexOf('"', i + 1);
      if (end < 0) return null;
      const prefix = query[end + 1] === "*";
      tokens.push({ type: "term", text: query.slice(i + 1, end), prefix });
      i = end + 1 + (prefix ? 1 : 0);
    } else if (isBareword(ch)) {
      let end = i;
      while (end < query.length && isBareword(query[end]!)) end++;
      const word = query.slice(i, end);
      if (query[end] === ":") {
        // A column filter: only our one column is known to FTS5.
        if (word.toLowerCase() !== "content") return null;
        i = end + 1;
        continue;
      }
      const prefix = query[end] === "*";
      if (!prefix && (word === "AND" || word === "OR" || word === "NOT")) tokens.push({ type: "op", op: word });
      else tokens.push({ type: "term", text: word, prefix });
      i = end + (prefix ? 1 : 0);
    } else {
      return null;
    }
  }
  return tokens;
}

/** A term as tsquery text: its words as a phrase, the last one a prefix when starred; null when it has no word. */
function termQuery(text: string, prefix: boolean): string | null {
  const words = text.split(SEPARATORS).filter((w) => w !== "");
  if (words.length === 0) return null;
  const quoted = words.map((w, i) => `'${w}'${prefix && i === words.length - 1 ? ":*" : ""}`);
  return quoted.length === 1 ? quoted[0]! : `(${quoted.join(" <-> ")})`;
}

/** Recursive descent over the tokens; each level returns null for "matches nothing". */
class Parser {
  #at = 0;
  constructor(readonly tokens: Token[]) {}

  parse(): string | null | undefined {
    const result = this.#or();
    return this.#at === this.tokens.length ? result : undefined;
  }

  #peekOp(): string | null {
    const t = this.tokens[this.#at];
    return t?.type === "op" ? t.op : null;
  }

  #or(): string | null | undefined {
    const parts = [this.#and()];
    while (this.#peekOp() === "OR") {
      this.#at++;
      parts.push(this.#and());
    }
    if (parts.includes(undefined)) return undefined;
    // A repeated operand changes nothing but the cost ("hello OR hello OR …").
    const kept = [...new Set(parts.filter((p): p is string => p !== null))];
    return kept.length === 0 ? null : kept.length === 1 ? kept[0]! : `(${kept.join(" | ")})`;
  }

  #and(): string | null | undefined {
    const parts = [this.#not()];
    for (;;) {
      const op = this.#peekOp();
      if (op === "AND") this.#at++;
      else if (op !== null || this.#at >= this.tokens.length) break;
      parts.push(this.#not());
    }
    if (parts.includes(undefined)) return undefined;
    // An operand with no word matches nothing, so the whole AND does.
    if (parts.includes(null)) return null;
    const unique = [...new Set(parts as string[])];
    return unique.length === 1 ? unique[0]! : `(${unique.join(" & ")})`;
  }

  #not(): string | null | undefined {
    let left = this.#term();
    while (this.#peekOp() === "NOT") {
      this.#at++;
      const right = this.#term();
      if (left === undefined || right === undefined) return undefined;
      if (left !== null && right !== null) left = `(${left} & !${right})`;
    }
    return left;
  }

  #term(): string | null | undefined {
    const t = this.tokens[this.#at];
    if (t?.type !== "term") return undefined;
    this.#at++;
    return termQuery(t.text, t.prefix);
  }
}

/**
 * The tsquery text for a sanitized FTS5 query; null when FTS5 would find nothing or fail to
 * parse it (the search then finds nothing, or falls back to the CJK substring search).
 */
export function ftsToTsquery(sanitized: string): string | null {
  const tokens = tokenize(sanitized);
  if (tokens === null || tokens.length === 0) return null;
  return new Parser(tokens).parse() ?? null;
}

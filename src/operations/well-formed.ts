/**
 * Text as SQLite and every reader of the file can take it. A JavaScript string may hold a lone
 * surrogate (an emoji cut in half by `slice`); written as is, SQLite stores bytes that are not
 * UTF-8 and the reference Python implementation can no longer read that row, or search at all.
 * Each lone surrogate becomes U+FFFD, exactly as the daemon's MessagePack decoding makes it, so
 * both modes store the same text.
 */

// ES2024's String methods, which Node 20 has and the ES2023 lib does not declare.
interface ES2024String {
  isWellFormed(): boolean;
  toWellFormed(): string;
}

export function wellFormed(text: string): string {
  const s = text as string & ES2024String;
  return s.isWellFormed() ? text : s.toWellFormed();
}

/** An object whose keys are all well-formed: the same one when they already are. */
export function withWellFormedKeys(value: object): object {
  const keys = Object.keys(value);
  if (keys.every((k) => (k as string & ES2024String).isWellFormed())) return value;
  // fromEntries defines own properties, so a `__proto__` key stays a key.
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [wellFormed(k), v as unknown]));
}

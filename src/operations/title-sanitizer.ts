/** Cleaning a title (SPEC §3, "Titles"): a pure function, apart from the SQL of titles.ts. */
import { SessionDBError } from "../errors.js";

export const MAX_TITLE_LENGTH = 100;

const CONTROL_CHARS = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F]/g;
const INVISIBLE_CHARS = /[\u200B-\u200F\u2028-\u202E\u2060-\u2069\uFEFF\uFFF9-\uFFFC]/g;
// JavaScript's \s plus NEL (U+0085), which Python counts as whitespace too.
const WHITESPACE_RUN = /[\s\u0085]+/g;

/**
 * Cleans a title: strips control, zero-width and direction-override characters, collapses
 * whitespace, trims. Null or empty gives null; over 100 code points fails with TITLE_TOO_LONG.
 */
export function sanitizeTitle(title: string | null | undefined): string | null {
  if (!title) return null;
  const cleaned = title.replace(CONTROL_CHARS, "").replace(INVISIBLE_CHARS, "").replace(WHITESPACE_RUN, " ").trim();
  if (cleaned === "") return null;
  let length = 0;
  for (const _ of cleaned) length++; // code points, without an array: a title may arrive megabytes long
  if (length > MAX_TITLE_LENGTH) {
    throw new SessionDBError("TITLE_TOO_LONG", `Title too long (${length} chars, max ${MAX_TITLE_LENGTH})`);
  }
  return cleaned;
}

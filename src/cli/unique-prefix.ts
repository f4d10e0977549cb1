/** The shortest start of a session id that still names it alone, as `show`/`title`/`delete` accept it. */
import type { SessionDB } from "../session-db.js";

/**
 * The shortest prefix of `id` that `resolveSessionId` resolves to `id` (a longer prefix always
 * does too, so a binary search over the length finds it); the id itself when no prefix is unique.
 */
export async function shortestUniquePrefix(db: SessionDB, id: string): Promise<string> {
  const chars = [...id];
  let [low, high] = [1, chars.length];
  while (low < high) {
    const middle = Math.floor((low + high) / 2);
    if ((await db.resolveSessionId(chars.slice(0, middle).join(""))) === id) high = middle;
    else low = middle + 1;
  }
  return chars.slice(0, high).join("");
}

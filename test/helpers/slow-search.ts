import { rawWrite } from "./raw-db.js";
import { buildSpecFile } from "./sqlite-files.js";

/** Messages in the slow-search fixture: enough that `SLOW_QUERY` keeps a reader busy. */
export const SLOW_SEARCH_MESSAGES = 40_000;

/** A file with one session ('big') of pseudo-random three-letter words (built in a few seconds). */
export function buildSlowSearchFile(path: string): void {
  buildSpecFile(path);
  rawWrite(path, (db) => {
    db.prepare("INSERT INTO sessions (id, source, started_at) VALUES ('big', 'cli', 1)").run();
    const insert = db.prepare("INSERT INTO messages (session_id, role, content, timestamp) VALUES ('big', 'user', ?, ?)");
    let x = 1;
    const word = () => {
      x = (x * 1103515245 + 12345) % 2147483648;
      return (x % 46656).toString(36).padStart(3, "a");
    };
    for (let i = 0; i < SLOW_SEARCH_MESSAGES; i++) insert.run(Array.from({ length: 12 }, word).join(" "), 1 + i / 1000);
    db.prepare(`UPDATE sessions SET message_count = ${SLOW_SEARCH_MESSAGES} WHERE id = 'big'`).run();
  });
}

/** A 4 KB query of OR-ed prefixes: it matches nearly every message, so it is slow. */
export const SLOW_QUERY = (() => {
  const terms: string[] = [];
  for (let i = 0; terms.join(" OR ").length < 4000; i++) terms.push(`${(i % 1296).toString(36).padStart(2, "a")}*`);
  return terms.join(" OR ");
})();

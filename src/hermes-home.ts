import { homedir } from "node:os";
import { join, resolve } from "node:path";
import { invalidArgument } from "./errors.js";

/**
 * The characters Python's `str.strip()` removes (`str.isspace()`): upstream's `get_hermes_home()`
 * strips `HERMES_HOME` with it, so both sides must trim the same set (JavaScript's `trim()` keeps
 * U+001C–U+001F and U+0085, and removes U+FEFF, which Python keeps).
 */
const PYTHON_SPACE = "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000";

/** Python's `text.strip()`. */
export function pythonStrip(text: string): string {
  let start = 0;
  let end = text.length;
  while (start < end && PYTHON_SPACE.includes(text[start]!)) start++;
  while (end > start && PYTHON_SPACE.includes(text[end - 1]!)) end--;
  return text.slice(start, end);
}

/**
 * A path from the environment or the command line that begins with `~`: Hermes never expands it
 * (upstream's `get_hermes_home()` is `Path(value)`), so it names a folder called `~` under the
 * working directory. Refused, naming that folder, rather than silently diverging from the agent
 * (by expanding) or creating a `~` folder the user did not mean (by not expanding).
 */
export function refuseTilde(name: string, value: string): void {
  if (!value.startsWith("~")) return;
  const own = value === "~" || value.startsWith("~/");
  throw invalidArgument(
    `${name} is ${JSON.stringify(value)}, which begins with "~": Hermes does not expand "~" and would use the folder ` +
      `${resolve(value)} (under the working directory); give an absolute path instead` +
      (own ? `, e.g. ${join(homedir(), value.slice(2))}` : ""),
  );
}

/**
 * Hermes' home as upstream's `get_hermes_home()` resolves it: `$HERMES_HOME` stripped of
 * surrounding whitespace, no `~` expansion (one beginning with `~` is refused), else `~/.hermes`.
 */
export function hermesHome(env: NodeJS.ProcessEnv = process.env): string {
  const value = pythonStrip(env.HERMES_HOME ?? "");
  if (value === "") return join(homedir(), ".hermes");
  refuseTilde("HERMES_HOME", value);
  return resolve(value);
}

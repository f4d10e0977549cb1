import { homedir, userInfo } from "node:os";
import { join } from "node:path";

/**
 * `~` and `~/…` (and `~<own user name>/…`) as the reference resolves them (Python's
 * os.path.expanduser): `.env` files and systemd units pass `HERMES_HOME=~/.hermes` literally,
 * and the agent and sessiondb must not split into two databases over it. Another user's `~name`
 * is left as it is (Node cannot look it up).
 */
export function expandHome(path: string): string {
  if (!path.startsWith("~")) return path;
  const slash = path.indexOf("/");
  const name = slash === -1 ? path.slice(1) : path.slice(1, slash);
  const rest = slash === -1 ? "" : path.slice(slash + 1);
  if (name !== "" && name !== userName()) return path;
  return rest === "" ? homedir() : join(homedir(), rest);
}

function userName(): string | null {
  try {
    return userInfo().username;
  } catch {
    return null;
  }
}

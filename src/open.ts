import { DirectStore } from "./direct/direct-store.js";
import { toSessionDBError } from "./errors.js";
import { resolveOptions } from "./options.js";
import type { OpenOptions, SessionDB } from "./session-db.js";

/**
 * Opens the session store. Mode "direct" opens the file in this process; "daemon" talks to the
 * daemon serving the file; "auto" (the default) uses the daemon when one answers, else direct.
 */
export async function openSessionDB(options: OpenOptions = {}): Promise<SessionDB> {
  try {
    const resolved = resolveOptions(options);
    return DirectStore.open(resolved);
  } catch (err) {
    throw toSessionDBError(err);
  }
}

/** SESSION on the command line: an exact id, a unique id prefix, or a title. */
import type { SessionDB } from "../session-db.js";
import { CliError, UsageError } from "./cli-error.js";

const SHOWN_MATCHES = 5;

/**
 * The session id `ref` names: an exact id or a unique id prefix (`resolveSessionId`), else a
 * title (`resolveSessionByTitle`: the newest `"<title> #N"` continuation wins). A prefix shared
 * by several ids fails with AMBIGUOUS naming them; anything else with NOT_FOUND.
 */
export async function resolveSession(db: SessionDB, ref: string): Promise<string> {
  return (await resolveSessionHow(db, ref)).id;
}

/**
 * How SESSION named the session: its exact id, a unique id `prefix`, its exact `title`, or a
 * title whose `lineage` led to a `"<title> #N"` continuation.
 */
export interface Resolution {
  id: string;
  by: "id" | "prefix" | "title" | "lineage";
}

/** `resolveSession`, saying how the session was found. */
export async function resolveSessionHow(db: SessionDB, ref: string): Promise<Resolution> {
  if (ref === "") throw new UsageError("SESSION must not be empty");
  const byId = await db.resolveSessionId(ref);
  if (byId !== null) return { id: byId, by: byId === ref ? "id" : "prefix" };
  const byTitle = await db.resolveSessionByTitle(ref);
  if (byTitle !== null) return { id: byTitle, by: (await db.getSessionTitle(byTitle)) === ref ? "title" : "lineage" };
  const matches = await db.sessionIdsByPrefix(ref, { limit: SHOWN_MATCHES + 1 });
  if (matches.length > 1) {
    const shown = matches.slice(0, SHOWN_MATCHES).map((id) => JSON.stringify(id)).join(", ");
    const more = matches.length > SHOWN_MATCHES ? ", …" : "";
    throw new CliError(
      "AMBIGUOUS",
      `${JSON.stringify(ref)} is the start of several session ids (${shown}${more}) and no title; give more of the id`,
    );
  }
  throw new CliError("NOT_FOUND", `no session ${JSON.stringify(ref)}: not an id, a unique id prefix or a title`);
}

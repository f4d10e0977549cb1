/**
 * The pages of `exportAll` (SPEC §3): up to 200 sessions, stopping early once a page holds 5,000
 * messages, so a page stays small whatever the database holds; keyset paging in
 * (started_at DESC, id DESC) order.
 */
import type { MessageRow } from "../message-types.js";
import type { SessionExport } from "../session-db.js";
import type { SessionRow } from "../session-types.js";

/** Where the next page starts: after this session in (started_at DESC, id DESC) order. */
export interface ExportCursor {
  startedAt: number;
  id: string;
}

export const PAGE_SESSIONS = 200;
export const PAGE_MESSAGES = 5000;

/** Where the page after `items` starts (`fetched` sessions were read for it), or null at the end. */
export function nextPage(items: readonly SessionExport[], fetched: number): ExportCursor | null {
  const last = items.at(-1);
  const full = items.length < fetched || fetched === PAGE_SESSIONS;
  return last !== undefined && full ? { startedAt: last.started_at, id: last.id } : null;
}

/**
 * A page's items from the sessions read for it, in order: asks for each session's messages
 * (yields its id; the engine answers with the messages, synchronously or with `await`) and
 * stops once the page holds PAGE_MESSAGES messages.
 */
export function* fillPage(sessions: readonly SessionRow[]): Generator<string, SessionExport[], MessageRow[]> {
  const items: SessionExport[] = [];
  let messages = 0;
  for (const session of sessions) {
    const exported = { ...session, messages: yield session.id };
    items.push(exported);
    messages += exported.messages.length;
    if (messages >= PAGE_MESSAGES) break;
  }
  return items;
}

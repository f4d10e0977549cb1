/**
 * The pages of `exportAll` (SPEC §3): up to 200 sessions, stopping early once a page holds 5,000
 * messages, so a page stays small whatever the database holds; keyset paging in
 * (started_at DESC, id DESC) order.
 */
import type { SessionExport } from "../session-db.js";

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

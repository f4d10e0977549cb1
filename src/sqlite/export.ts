/** Exports: one session, or every session streamed in pages (SPEC §3, exportSession/exportAll). */
import type { SessionExport, SessionRow } from "../session-db.js";
import { field, optObject, optStr, str } from "../operations/args.js";
import { sql } from "./connection.js";
import { messagesOf } from "./messages.js";
import { read, stream } from "./define-operation.js";
import { SESSION_SELECT } from "../operations/rows.js";
import { getSessionRow } from "./sessions.js";
import { inReadSnapshot } from "./transaction.js";

export const exportSession = read(
  (args) => ({ id: str(args[0], "id") }),
  // The row's counters and the messages are read on one snapshot, so they agree.
  (db, p): SessionExport | null =>
    inReadSnapshot(db, () => {
      const session = getSessionRow(db, p.id);
      return session === null ? null : { ...session, messages: messagesOf(db, session.id) };
    }),
);

/** Where the next page starts: after this session in (started_at DESC, id DESC) order. */
export interface ExportCursor {
  startedAt: number;
  id: string;
}

export const PAGE_SESSIONS = 200;
export const PAGE_MESSAGES = 5000;

/**
 * A page holds up to 200 sessions, and stops early once it holds 5,000 messages, so a page stays
 * small whatever the database holds. Keyset paging. Every page of one export must be read on one
 * snapshot (`ExportSnapshot`: direct mode, the daemon's export threads); a page alone is read in
 * one read transaction, so its sessions' counters match their messages.
 */
export const exportAll = stream(
  (args) => ({ source: optStr(field(optObject(args[0], "opts"), "source"), "opts.source") }),
  (db, p, cursor: ExportCursor | null) => inReadSnapshot(db, () => {
    const sessions = sql(
      db,
      `SELECT ${SESSION_SELECT} FROM sessions s
       WHERE (@source IS NULL OR s.source = @source)
         AND (@afterStarted IS NULL OR s.started_at < @afterStarted OR (s.started_at = @afterStarted AND s.id < @afterId))
       ORDER BY s.started_at DESC, s.id DESC LIMIT ${PAGE_SESSIONS}`,
    ).all({ source: p.source, afterStarted: cursor?.startedAt ?? null, afterId: cursor?.id ?? null }) as SessionRow[];
    const items: SessionExport[] = [];
    let messages = 0;
    for (const session of sessions) {
      const exported = { ...session, messages: messagesOf(db, session.id) };
      items.push(exported);
      messages += exported.messages.length;
      if (messages >= PAGE_MESSAGES) break;
    }
    return { items, next: nextPage(items, sessions.length) };
  }),
);

/** Where the page after `items` starts (`fetched` sessions were read for it), or null at the end. */
export function nextPage(items: readonly SessionExport[], fetched: number): ExportCursor | null {
  const last = items.at(-1);
  const full = items.length < fetched || fetched === PAGE_SESSIONS;
  return last !== undefined && full ? { startedAt: last.started_at, id: last.id } : null;
}

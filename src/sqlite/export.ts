/** Exports: one session, or every session streamed in pages (SPEC §3, exportSession/exportAll). */
import type { SessionExport, SessionRow } from "../session-db.js";
import { sql } from "./connection.js";
import { messagesOf } from "./messages.js";
import { read, stream } from "./define-operation.js";
import { fillPage, nextPage, PAGE_SESSIONS, type ExportCursor } from "../operations/export-page.js";
import { SESSION_SELECT } from "../operations/rows.js";
import { getSessionRow } from "./sessions.js";
import { inReadSnapshot } from "./transaction.js";

// The row's counters and the messages are read on one snapshot, so they agree.
export const exportSession = read("exportSession", (db, p): SessionExport | null =>
  inReadSnapshot(db, () => {
    const session = getSessionRow(db, p.id);
    return session === null ? null : { ...session, messages: messagesOf(db, session.id) };
  }));

/**
 * A page as operations/export-page.ts says. Every page of one export must be read on one
 * snapshot (`ExportSnapshot`: direct mode, the daemon's export threads); a page alone is read in
 * one read transaction, so its sessions' counters match their messages.
 */
export const exportAll = stream("exportAll", (db, p, cursor: ExportCursor | null) => inReadSnapshot(db, () => {
  const sessions = sql(
    db,
    `SELECT ${SESSION_SELECT} FROM sessions s
     WHERE (@source IS NULL OR s.source = @source)
       AND (@afterStarted IS NULL OR s.started_at < @afterStarted OR (s.started_at = @afterStarted AND s.id < @afterId))
     ORDER BY s.started_at DESC, s.id DESC LIMIT ${PAGE_SESSIONS}`,
  ).all({ source: p.source, afterStarted: cursor?.startedAt ?? null, afterId: cursor?.id ?? null }) as SessionRow[];
  const fill = fillPage(sessions);
  let step = fill.next();
  while (step.done !== true) step = fill.next(messagesOf(db, step.value));
  return { items: step.value, next: nextPage(step.value, sessions.length) };
}));

/** What `prune` would delete, found before anything is: so the prompt and `--dry-run` can say it. */
import { MAX_LIMIT } from "../operations/args.js";
import type { SessionDB, SessionRow } from "../session-db.js";

export interface PruneCandidate {
  id: string;
  title: string | null;
  source: string;
  started_at: number;
  ended_at: number;
  message_count: number;
}

export interface PrunePlan {
  sessions: PruneCandidate[];
  messages: number;
}

/**
 * The sessions `pruneSessions` would delete now (ended, started before the cutoff, of the source
 * if given), newest first, with their message count. Sessions ending between this look and the
 * prune itself may join them; the prune's own count is the one reported afterwards.
 */
export async function prunePlan(db: SessionDB, olderThanDays: number, source: string | null): Promise<PrunePlan> {
  const cutoff = Date.now() / 1000 - olderThanDays * 86400;
  const sessions: PruneCandidate[] = [];
  for (let offset = 0; ; offset += MAX_LIMIT) {
    const page: SessionRow[] = await db.searchSessions({ source, limit: MAX_LIMIT, offset });
    for (const s of page) {
      if (s.ended_at === null || s.started_at >= cutoff) continue;
      const { id, title, started_at, ended_at, message_count } = s;
      sessions.push({ id, title, source: s.source, started_at, ended_at, message_count });
    }
    if (page.length < MAX_LIMIT) break;
  }
  return { sessions, messages: sessions.reduce((sum, s) => sum + s.message_count, 0) };
}

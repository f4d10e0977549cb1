/**
 * The change a write makes to its session, by op, and the order a batch's events are told in: a
 * look that reads several writes at once (one group-committed transaction, one PostgreSQL
 * snapshot) diffs the sessions in one fixed order, but a watcher expects commit order, so each
 * event is placed where the write that made it ran.
 */
import type { WriteOpName } from "../operation-catalogue.js";
import type { SessionChange } from "../watch-types.js";
import type { FeedEvent } from "./watch-filter.js";

/** The change a write of `op` makes to its session when it changes it (prune and append: none of their own). */
export const CHANGE_OF: Partial<Record<WriteOpName, SessionChange>> = {
  createSession: "created", ensureSession: "created", importSession: "created", endSession: "ended",
  reopenSession: "reopened", updateSystemPrompt: "system_prompt", setSessionTitle: "titled",
  updateTokenCounts: "tokens", clearMessages: "cleared", popMessage: "cleared", deleteSession: "deleted",
};

/** The key an event is known by in a `madeAt` map: a message's id, a session change's `change\0session`. */
export function eventKey({ event }: FeedEvent): string | number {
  return event.type === "message" ? event.message.id : event.type === "session" ? changeKey(event.change, event.sessionId) : "";
}

export function changeKey(change: SessionChange, sessionId: string): string {
  return `${change}\0${sessionId}`;
}

/**
 * A look's events (`created`, then messages, then the other changes, as the diff gives them) in
 * the order of `madeAt`, the place of the write that made each. A message no write names goes
 * with its session's creation when the batch made it (an import's messages), else before the
 * batch's or after them by its id (message ids grow in commit order: another process's commit).
 * Another event no write names keeps its phase: a session created before all, the rest after all
 * (or at `fallback`, the place of a write that may change any session, a prune).
 */
export function inWriteOrder(events: readonly FeedEvent[], madeAt: ReadonlyMap<string | number, number>, fallback = Infinity): FeedEvent[] {
  let firstMessage = Infinity;
  for (const key of madeAt.keys()) if (typeof key === "number") firstMessage = Math.min(firstMessage, key);
  const placed = events.map((e, i) => {
    const { event } = e;
    const phase = event.type === "session" ? (event.change === "created" ? 0 : 2) : 1;
    let at = madeAt.get(eventKey(e));
    if (at === undefined && event.type === "message") {
      at = madeAt.get(changeKey("created", event.message.session_id)) ?? (event.message.id < firstMessage ? -1 : Infinity);
    }
    return { e, i, phase, at: at ?? (phase === 0 ? -1 : fallback) };
  });
  placed.sort((x, y) => (x.at === y.at ? 0 : x.at < y.at ? -1 : 1) || x.phase - y.phase || x.i - y.i);
  return placed.map(({ e }) => e);
}

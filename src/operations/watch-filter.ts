/**
 * A subscription's filter and cursor, checked once where `watch` enters (the handle, or the
 * daemon's dispatch), and the test every event source applies to its events.
 */
import { invalidArgument } from "../errors.js";
import { arity, field, optInteger, optObject, optStr, type Args } from "./args.js";
import type { WatchEvent } from "../watch-types.js";

export interface WatchFilter {
  sessionId: string | null;
  source: string | null;
  /** Null: from now (the newest message id when the subscription starts). */
  afterMessageId: number | null;
}

/** `watch`'s arguments (`[{ sessionId?, source?, afterMessageId? }]`; the signal stays in the process). */
export function parseWatchFilter(args: Args): WatchFilter {
  arity(args, 1, "watch");
  const opts = optObject(args[0], "opts");
  const sessionId = optStr(field(opts, "sessionId"), "opts.sessionId");
  const source = optStr(field(opts, "source"), "opts.source");
  const afterMessageId = optInteger(field(opts, "afterMessageId"), "opts.afterMessageId");
  if (afterMessageId !== null && afterMessageId < 0) throw invalidArgument(`watch: opts.afterMessageId must be 0 or more, got ${afterMessageId}`);
  if (sessionId !== null && source !== null) throw invalidArgument("watch: give opts.sessionId or opts.source, not both");
  return { sessionId, source, afterMessageId };
}

/**
 * A feed event and the source of its session, as the event sources hand them on: a filter on
 * `source` reads it (a deleted session's row is gone, and a message carries no source).
 */
export interface FeedEvent {
  event: WatchEvent;
  source: string | null;
}

/**
 * Whether an event is the filter's. `source`: the source of the event's session (a deleted
 * session's row is gone, so the source travels beside the event).
 */
export function matchesFilter(filter: WatchFilter, event: WatchEvent, source: string | null): boolean {
  if (event.type === "resync") return true;
  if (filter.sessionId !== null) return (event.type === "message" ? event.message.session_id : event.sessionId) === filter.sessionId;
  return filter.source === null || filter.source === source;
}

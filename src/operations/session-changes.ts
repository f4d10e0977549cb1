/**
 * What changed in a session, told from two looks at its mutable columns: the one way every event
 * source (direct mode's poll, the daemon's writer, a foreign commit's diff) names a session's
 * change, so the modes agree on the events.
 */
import type { SessionChange } from "../watch-types.js";

/** The columns a change is told from, in a compact comparable form; `source` for filtering. */
export interface SessionMark {
  source: string;
  ended: number | null;
  title: string | null;
  /** The token counts and billing columns, joined. */
  tokens: string;
  /** The system prompt's length and ends (a full copy of every prompt would be held otherwise). */
  prompt: string;
  messages: number;
  toolCalls: number;
}

/** A session's mark as both engines select it (their SQL spells `tokens` and `prompt` alike). */
export interface SessionMarkRow {
  id: string;
  source: string;
  ended_at: number | null;
  title: string | null;
  tokens: string;
  prompt: string;
  message_count: number;
  tool_call_count: number;
}

export function toSessionMark(row: SessionMarkRow): SessionMark {
  return {
    source: row.source, ended: row.ended_at, title: row.title, tokens: row.tokens, prompt: row.prompt,
    messages: row.message_count, toolCalls: row.tool_call_count,
  };
}

/**
 * The changes from `before` to `after` (undefined: no row), in the order a reader applies them.
 * Messages appended raise `messages` and are told by their own events, not here.
 */
export function sessionChanges(before: SessionMark | undefined, after: SessionMark | undefined): SessionChange[] {
  if (before === undefined) return after === undefined ? [] : ["created"];
  if (after === undefined) return ["deleted"];
  const changes: SessionChange[] = [];
  if (after.messages < before.messages || after.toolCalls < before.toolCalls) changes.push("cleared");
  if (before.prompt !== after.prompt) changes.push("system_prompt");
  if (before.title !== after.title) changes.push("titled");
  if (before.tokens !== after.tokens) changes.push("tokens");
  if (before.ended !== after.ended) changes.push(after.ended === null ? "reopened" : "ended");
  return changes;
}

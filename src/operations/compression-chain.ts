/**
 * Compression chains (SPEC §3, "Compression chains"): a conversation split by context compression
 * is followed to its live end. The walk is written once, as a generator that asks its engine for
 * what it needs to know; each engine answers from its own SQL (synchronously or not).
 */

const MAX_CHAIN_HOPS = 100;

/** How a session ended. */
export interface SessionEnd {
  end_reason: string | null;
  ended_at: number | null;
}

/**
 * What the walk asks: how a session ended (`end`: answer its `SessionEnd`, or undefined for no
 * such session), or the id of its newest child started at or after `since` (`continuation`:
 * answer the id, or undefined for none; or the child with how it ended, which saves the walk its
 * next question).
 */
export type ChainQuestion = { readonly ask: "end"; readonly id: string } | { readonly ask: "continuation"; readonly id: string; readonly since: number };

/** A session and how it ended: a row the engine has read already. */
export interface EndedSession extends SessionEnd {
  id: string;
}

export type ChainAnswer = SessionEnd | EndedSession | string | undefined;

/**
 * While the session ended with 'compression', move to its newest child started after it ended
 * (children started before the end are delegated sub-agents, never the tip); at most 100 hops.
 * Starts from an id, or from a session whose end is known (a listed row). Returns the tip's id.
 */
export function* compressionTipWalk(start: string | EndedSession): Generator<ChainQuestion, string, ChainAnswer> {
  let current = typeof start === "string" ? start : start.id;
  // How `current` ended, when already known (null: to be asked).
  let known: SessionEnd | null = typeof start === "string" ? null : start;
  for (let hop = 0; hop < MAX_CHAIN_HOPS; hop++) {
    const end = known ?? ((yield { ask: "end", id: current }) as SessionEnd | undefined);
    if (end === undefined || end.end_reason !== "compression" || end.ended_at === null) break;
    const child = (yield { ask: "continuation", id: current, since: end.ended_at }) as EndedSession | string | undefined;
    if (child === undefined) break;
    current = typeof child === "string" ? child : child.id;
    known = typeof child === "string" ? null : child;
  }
  return current;
}

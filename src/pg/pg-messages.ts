/** Messages, the rich listing, compression chains and per-source counts on PostgreSQL (SPEC §3). */
import { invalidArgument } from "../errors.js";
import { now } from "../operations/clock.js";
import { decodeMessage, MESSAGE_SELECT, SESSION_SELECT } from "../operations/rows.js";
import { compressionTipWalk, type ChainAnswer, type ChainQuestion } from "../operations/compression-chain.js";
import { CONVERSATION_COLUMNS, toConversation, type StoredConversationRow } from "../operations/conversation.js";
import { toolCallCount } from "../operations/message-params.js";
import { finishRow, isCompressedRoot, projectOntoRoot } from "../operations/rich-listing.js";
import type { MessageRow, RichSessionRow, SourceCount } from "../session-db.js";
import type { PgQueryable } from "./pg-connection.js";
import { list, one, rows, type PgRunners } from "./pg-operation.js";

export async function messagesOf(db: PgQueryable, sessionId: string): Promise<MessageRow[]> {
  const stored = await rows<Parameters<typeof decodeMessage>[0]>(
    db,
    `SELECT ${MESSAGE_SELECT} FROM messages m WHERE m.session_id = $1 ORDER BY m.timestamp, m.id`,
    [sessionId],
  );
  return stored.map(decodeMessage);
}

/** The newest child of a session started at or after a time: the next session of its chain. */
const CONTINUATION_SQL = "SELECT id FROM sessions WHERE parent_session_id = $1 AND started_at >= $2 ORDER BY started_at DESC LIMIT 1";

async function answer(db: PgQueryable, q: ChainQuestion): Promise<ChainAnswer> {
  if (q.ask === "end") return one<{ end_reason: string | null; ended_at: number | null }>(db, "SELECT end_reason, ended_at FROM sessions WHERE id = $1", [q.id]);
  const child = await one<{ id: string }>(db, CONTINUATION_SQL, [q.id, q.since]);
  return child?.id;
}

/** The live end of the conversation `id` belongs to (operations/compression-chain.ts). */
async function compressionTip(db: PgQueryable, id: string): Promise<string> {
  const walk = compressionTipWalk(id);
  for (let step = walk.next(); ; ) {
    if (step.done === true) return step.value;
    step = walk.next(await answer(db, step.value));
  }
}

const RICH_SELECT = `SELECT ${SESSION_SELECT},
  COALESCE((SELECT MAX(m.timestamp) FROM messages m WHERE m.session_id = s.id), s.started_at) AS last_active,
  COALESCE((SELECT substr(replace(replace(m.content, chr(10), ' '), chr(13), ' '), 1, 63) FROM messages m
            WHERE m.session_id = s.id AND m.role = 'user' AND m.content IS NOT NULL
            ORDER BY m.timestamp, m.id LIMIT 1), '') AS preview
  FROM sessions s`;

const LIST_SQL = `${RICH_SELECT}
  WHERE ($1::boolean OR s.parent_session_id IS NULL)
    AND ($2::text IS NULL OR s.source = $2)
    AND ($3::text[] IS NULL OR NOT (s.source = ANY($3)))
  ORDER BY s.started_at DESC LIMIT $4 OFFSET $5`;

/** The next session of a chain as a listed row (its preview raw). */
const NEXT_ROW_SQL = `${RICH_SELECT} WHERE s.id = (${CONTINUATION_SQL})`;

/**
 * A compressed root shown as its chain's tip. The walk starts from the row's own end, and each
 * hop reads the next session's whole row, whose end the walk then knows: one round trip per hop
 * (there were four for a chain of two: the root's end, its child's id, the child's end, its row).
 */
async function project(db: PgQueryable, root: RichSessionRow): Promise<RichSessionRow> {
  if (!isCompressedRoot(root)) return root;
  let tip = root;
  const walk = compressionTipWalk(root);
  for (let step = walk.next(); step.done !== true; ) {
    const q = step.value;
    if (q.ask === "end") {
      step = walk.next(await answer(db, q));
      continue;
    }
    const next = await one<RichSessionRow>(db, NEXT_ROW_SQL, [q.id, q.since]);
    if (next !== undefined) tip = next;
    step = walk.next(next);
  }
  return tip.id === root.id ? root : projectOntoRoot(root, tip);
}

export const messageRunners = {
  async appendMessage(db, p) {
    if (p.tokenCountBound !== null) {
      // A REAL, TEXT or BLOB token count (the reference's SQLite keeps one) has no BIGINT equivalent.
      throw invalidArgument(
        `msg.tokenCountBound: PostgreSQL stores token counts as BIGINT; ${String(p.tokenCountBound)} is not a whole number of tokens`,
      );
    }
    // One statement, one round trip: the insert and the counters (a missing session fails the
    // insert's foreign key, so nothing is counted).
    const inserted = await one<{ id: number }>(
      db,
      `WITH inserted AS (
         INSERT INTO messages (session_id, role, content, tool_call_id, tool_calls, tool_name, timestamp,
           token_count, finish_reason, reasoning, reasoning_details, codex_reasoning_items)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING id),
       counted AS (
         UPDATE sessions SET message_count = message_count + 1, tool_call_count = tool_call_count + $13 WHERE id = $1)
       SELECT id FROM inserted`,
      [
        p.sessionId, p.role, p.content, p.toolCallId, p.toolCalls, p.toolName, p.timestamp ?? now(), p.tokenCount,
        p.finishReason, p.reasoning, p.reasoningDetails, p.codexReasoningItems, p.toolCallIncrement,
      ],
    );
    return inserted!.id;
  },

  getMessages: (db, p) => messagesOf(db, p.sessionId),

  async getMessagesAsConversation(db, p) {
    const stored = await rows<StoredConversationRow>(
      db,
      `SELECT ${CONVERSATION_COLUMNS.join(", ")} FROM messages WHERE session_id = $1 ORDER BY timestamp, id`,
      [p.sessionId],
    );
    return stored.map(toConversation);
  },

  async clearMessages(db, p) {
    await db.query("DELETE FROM messages WHERE session_id = $1", [p.sessionId]);
    await db.query("UPDATE sessions SET message_count = 0, tool_call_count = 0 WHERE id = $1", [p.sessionId]);
  },

  async popMessage(db, p) {
    const row = await one<Parameters<typeof decodeMessage>[0]>(
      db,
      `SELECT ${MESSAGE_SELECT} FROM messages m WHERE m.session_id = $1 ORDER BY m.timestamp DESC, m.id DESC LIMIT 1 FOR UPDATE`,
      [p.sessionId],
    );
    if (row === undefined) return null;
    const message = decodeMessage(row);
    await db.query("DELETE FROM messages WHERE id = $1", [message.id]);
    await db.query(
      "UPDATE sessions SET message_count = GREATEST(message_count - 1, 0), tool_call_count = GREATEST(tool_call_count - $2, 0) WHERE id = $1",
      [p.sessionId, toolCallCount(message.tool_calls)],
    );
    return message;
  },

  async messageCount(db, p) {
    const row = await one<{ n: number }>(db, "SELECT COUNT(*) AS n FROM messages WHERE ($1::text IS NULL OR session_id = $1)", [p.sessionId]);
    return row?.n ?? 0;
  },

  getCompressionTip: (db, p) => compressionTip(db, p.id),

  async listSessionsRich(db, p) {
    const listed = (
      await rows<RichSessionRow>(db, LIST_SQL, [p.children === 1, p.source, list(p.excluded), p.limit, p.offset])
    ).map(finishRow);
    if (!p.project) return listed;
    const projected: RichSessionRow[] = [];
    for (const row of listed) projected.push(await project(db, row));
    return projected;
  },

  sourceCounts: (db) =>
    // Messages are counted, not summed from message_count: the counter is the agent's, the rows are the truth.
    rows<SourceCount>(
      db,
      `SELECT s.source AS source, COUNT(*) AS sessions,
         COALESCE(SUM((SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id)), 0)::bigint AS messages
       FROM sessions s GROUP BY s.source ORDER BY sessions DESC, s.source COLLATE "C"`,
    ),
} satisfies Partial<PgRunners>;

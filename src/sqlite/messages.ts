/** Appending and loading messages (SPEC §3, appendMessage … clearMessages). */
import type { MessageRow } from "../session-db.js";
import { now, sql, type Connection } from "./connection.js";
import { read, write } from "./define-operation.js";
import { CONVERSATION_COLUMNS, toConversation, type StoredConversationRow } from "../operations/conversation.js";
import { toolCallCount } from "../operations/message-params.js";
import { decodeMessage, MESSAGE_SELECT } from "../operations/rows.js";

export const appendMessage = write("appendMessage", (db, p): number => {
  const { lastInsertRowid } = sql(
    db,
    `INSERT INTO messages (session_id, role, content, tool_call_id, tool_calls, tool_name, timestamp,
       token_count, finish_reason, reasoning, reasoning_details, codex_reasoning_items)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  ).run(
    p.sessionId, p.role, p.content, p.toolCallId, p.toolCalls, p.toolName, p.timestamp ?? now(), p.tokenCountBound ?? p.tokenCount,
    p.finishReason, p.reasoning, p.reasoningDetails, p.codexReasoningItems,
  );
  sql(db, "UPDATE sessions SET message_count = message_count + 1, tool_call_count = tool_call_count + ? WHERE id = ?").run(
    p.toolCallIncrement, p.sessionId,
  );
  return Number(lastInsertRowid);
});

export function messagesOf(db: Connection, sessionId: string): MessageRow[] {
  const rows = sql(db, `SELECT ${MESSAGE_SELECT} FROM messages m WHERE m.session_id = ? ORDER BY m.timestamp, m.id`).all(
    sessionId,
  ) as Array<Parameters<typeof decodeMessage>[0]>;
  return rows.map(decodeMessage);
}

export const getMessages = read("getMessages", (db, p) => messagesOf(db, p.sessionId));

export const getMessagesAsConversation = read("getMessagesAsConversation", (db, p) => {
  const rows = sql(
    db,
    `SELECT ${CONVERSATION_COLUMNS.join(", ")} FROM messages WHERE session_id = ? ORDER BY timestamp, id`,
  ).all(p.sessionId) as StoredConversationRow[];
  return rows.map(toConversation);
});

export const clearMessages = write("clearMessages", (db, p): void => {
  sql(db, "DELETE FROM messages WHERE session_id = ?").run(p.sessionId);
  sql(db, "UPDATE sessions SET message_count = 0, tool_call_count = 0 WHERE id = ?").run(p.sessionId);
});

export const popMessage = write("popMessage", (db, p): MessageRow | null => {
  const row = sql(db, `SELECT ${MESSAGE_SELECT} FROM messages m WHERE m.session_id = ? ORDER BY m.timestamp DESC, m.id DESC LIMIT 1`).get(
    p.sessionId,
  ) as Parameters<typeof decodeMessage>[0] | undefined;
  if (row === undefined) return null;
  const message = decodeMessage(row);
  sql(db, "DELETE FROM messages WHERE id = ?").run(message.id);
  sql(db, "UPDATE sessions SET message_count = max(message_count - 1, 0), tool_call_count = max(tool_call_count - ?, 0) WHERE id = ?").run(
    toolCallCount(message.tool_calls), p.sessionId,
  );
  return message;
});

export const messageCount = read("messageCount", (db, p) =>
  (p.sessionId === null
    ? sql(db, "SELECT COUNT(*) FROM messages").pluck().get()
    : sql(db, "SELECT COUNT(*) FROM messages WHERE session_id = ?").pluck().get(p.sessionId)) as number);


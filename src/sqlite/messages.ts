/** Appending and loading messages (SPEC §3, appendMessage … clearMessages). */
import type { ConversationMessage, MessageRow } from "../session-db.js";
import {
  checkTotalText, field, jsonColumn, nonEmpty, optBoundCount, optInteger, optObject, optStr, optText, optTimestamp, str, type Args,
} from "../operations/args.js";
import { now, sql, type Connection } from "./connection.js";
import { read, write } from "./define-operation.js";
import { decodeJson, decodeMessage, MESSAGE_SELECT } from "../operations/rows.js";

/** Tool calls counted for a message: an array's length, 1 for any other value, 0 when absent. */
export function toolCallCount(toolCalls: unknown): number {
  if (toolCalls === undefined || toolCalls === null) return 0;
  return Array.isArray(toolCalls) ? toolCalls.length : 1;
}

export const appendMessage = write(
  (args, op) => {
    const msg = optObject(args[1], "msg");
    const toolCalls = jsonColumn(msg, "toolCalls", "msg");
    const params = {
      sessionId: str(args[0], "sessionId"),
      role: nonEmpty(field(msg, "role"), "msg.role"),
      content: optText(field(msg, "content"), "msg.content"),
      toolCallId: optStr(field(msg, "toolCallId"), "msg.toolCallId"),
      toolCalls: toolCalls.text,
      toolName: optStr(field(msg, "toolName"), "msg.toolName"),
      tokenCount: optInteger(field(msg, "tokenCount"), "msg.tokenCount"),
      // The reference's own bind of token_count (optBoundCount), replacing tokenCount when given.
      tokenCountBound: optBoundCount(field(msg, "tokenCountBound"), "msg.tokenCountBound"),
      finishReason: optStr(field(msg, "finishReason"), "msg.finishReason"),
      reasoning: optText(field(msg, "reasoning"), "msg.reasoning"),
      reasoningDetails: jsonColumn(msg, "reasoningDetails", "msg").text,
      codexReasoningItems: jsonColumn(msg, "codexReasoningItems", "msg").text,
      toolCallIncrement: toolCallCount(toolCalls.value),
      // The time the message was written, when the caller knows it (a replayed spool record); else now.
      timestamp: optTimestamp(field(msg, "timestamp"), "msg.timestamp"),
    };
    checkTotalText(op, [params.content, params.toolCalls, params.reasoning, params.reasoningDetails, params.codexReasoningItems]);
    return params;
  },
  (db, p): number => {
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
  },
);

export function messagesOf(db: Connection, sessionId: string): MessageRow[] {
  const rows = sql(db, `SELECT ${MESSAGE_SELECT} FROM messages m WHERE m.session_id = ? ORDER BY m.timestamp, m.id`).all(
    sessionId,
  ) as Array<Parameters<typeof decodeMessage>[0]>;
  return rows.map(decodeMessage);
}

const sessionIdArg = (args: Args) => ({ sessionId: str(args[0], "sessionId") });

export const getMessages = read(sessionIdArg, (db, p) => messagesOf(db, p.sessionId));

export type StoredConversationRow = Record<(typeof CONVERSATION_COLUMNS)[number], string | null>;
const CONVERSATION_COLUMNS = [
  "role", "content", "tool_call_id", "tool_name", "tool_calls", "reasoning", "reasoning_details",
  "codex_reasoning_items",
] as const;

/** The OpenAI-shaped history the agent reloads: optional fields only when stored and truthy. */
export function toConversation(row: StoredConversationRow): ConversationMessage {
  const msg: ConversationMessage = { role: row.role ?? "", content: row.content };
  if (row.tool_call_id) msg.tool_call_id = row.tool_call_id;
  if (row.tool_name) msg.tool_name = row.tool_name;
  if (row.tool_calls) msg.tool_calls = decodeJson(row.tool_calls, []);
  if (row.role === "assistant") {
    if (row.reasoning) msg.reasoning = row.reasoning;
    if (row.reasoning_details) msg.reasoning_details = decodeJson(row.reasoning_details, null);
    if (row.codex_reasoning_items) msg.codex_reasoning_items = decodeJson(row.codex_reasoning_items, null);
  }
  return msg;
}

export const getMessagesAsConversation = read(sessionIdArg, (db, p) => {
  const rows = sql(
    db,
    `SELECT ${CONVERSATION_COLUMNS.join(", ")} FROM messages WHERE session_id = ? ORDER BY timestamp, id`,
  ).all(p.sessionId) as StoredConversationRow[];
  return rows.map(toConversation);
});

export const clearMessages = write(sessionIdArg, (db, p): void => {
  sql(db, "DELETE FROM messages WHERE session_id = ?").run(p.sessionId);
  sql(db, "UPDATE sessions SET message_count = 0, tool_call_count = 0 WHERE id = ?").run(p.sessionId);
});

export const popMessage = write(sessionIdArg, (db, p): MessageRow | null => {
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

export const messageCount = read(
  (args) => ({ sessionId: optStr(field(optObject(args[0], "opts"), "sessionId"), "opts.sessionId") }),
  (db, p) =>
    (p.sessionId === null
      ? sql(db, "SELECT COUNT(*) FROM messages").pluck().get()
      : sql(db, "SELECT COUNT(*) FROM messages WHERE session_id = ?").pluck().get(p.sessionId)) as number,
);


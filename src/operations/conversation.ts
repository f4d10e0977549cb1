/** The OpenAI-shaped history the agent reloads (`getMessagesAsConversation`), from stored columns. */
import type { ConversationMessage } from "../session-db.js";
import { decodeJson } from "./rows.js";

/** The columns a conversation message is made of, in the order both engines select them. */
export const CONVERSATION_COLUMNS = [
  "role", "content", "tool_call_id", "tool_name", "tool_calls", "reasoning", "reasoning_details",
  "codex_reasoning_items",
] as const;

export type StoredConversationRow = Record<(typeof CONVERSATION_COLUMNS)[number], string | null>;

/** A stored message as the agent reloads it: optional fields only when stored and truthy. */
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

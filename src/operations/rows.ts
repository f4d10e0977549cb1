import type { MessageRow, SessionRow } from "../session-db.js";

/** The columns of `sessions` in schema order, so rows look the same on migrated and fresh files. */
export const SESSION_COLUMNS = [
  "id", "source", "user_id", "model", "model_config", "system_prompt", "parent_session_id",
  "started_at", "ended_at", "end_reason", "message_count", "tool_call_count", "input_tokens",
  "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens",
  "billing_provider", "billing_base_url", "billing_mode", "estimated_cost_usd", "actual_cost_usd",
  "cost_status", "cost_source", "pricing_version", "title",
] as const;

export const MESSAGE_COLUMNS = [
  "id", "session_id", "role", "content", "tool_call_id", "tool_calls", "tool_name", "timestamp",
  "token_count", "finish_reason", "reasoning", "reasoning_details", "codex_reasoning_items",
] as const;

/** `s.id, s.source, …` for a SELECT. */
export function columnList(columns: readonly string[], alias: string): string {
  return columns.map((c) => `${alias}.${c}`).join(", ");
}

export const SESSION_SELECT = columnList(SESSION_COLUMNS, "s");
export const MESSAGE_SELECT = columnList(MESSAGE_COLUMNS, "m");

/** Parses stored JSON, giving `fallback` for damaged text: one bad row never fails a load. */
export function decodeJson(text: string | null, fallback: unknown): unknown {
  if (!text) return fallback;
  try {
    return JSON.parse(text);
  } catch {
    return fallback;
  }
}

type StoredMessage = Omit<MessageRow, "tool_calls"> & { tool_calls: string | null };

export function decodeMessage(row: StoredMessage): MessageRow {
  return { ...row, tool_calls: row.tool_calls ? decodeJson(row.tool_calls, []) : row.tool_calls };
}

export type { SessionRow };

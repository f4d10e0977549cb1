/**
 * The messages of the contract: the row of `messages` (snake_case, as stored), what
 * `appendMessage` takes, the conversation shape the agent reloads, and search hits and options.
 */
/** The 13 columns of `messages`; `tool_calls` is JSON-decoded (undecodable text gives `[]`). */
export interface MessageRow {
  id: number;
  session_id: string;
  role: string;
  content: string | null;
  tool_call_id: string | null;
  tool_calls: unknown;
  tool_name: string | null;
  timestamp: number;
  token_count: number | null;
  finish_reason: string | null;
  reasoning: string | null;
  reasoning_details: string | null;
  codex_reasoning_items: string | null;
}

export interface NewMessage {
  role: string;
  content?: string | null;
  toolName?: string | null;
  toolCalls?: unknown;
  toolCallId?: string | null;
  tokenCount?: number | null;
  finishReason?: string | null;
  reasoning?: string | null;
  reasoningDetails?: unknown;
  codexReasoningItems?: unknown;
  /**
   * When the message was written, in Unix seconds (a float, as stored): finite and above 0.
   * Default: the time the write is applied. Given by a replayed spool record, so a session's
   * messages sort where they were written; part of the write's arguments, so the same
   * idempotency key with another timestamp is `IDEMPOTENCY_CONFLICT`.
   */
  timestamp?: number | null;
}

/** One message in the OpenAI conversation shape the agent reloads. */
export interface ConversationMessage {
  role: string;
  content: string | null;
  tool_call_id?: string;
  tool_name?: string;
  tool_calls?: unknown;
  reasoning?: string;
  reasoning_details?: unknown;
  codex_reasoning_items?: unknown;
}

export interface SearchHit {
  id: number;
  session_id: string;
  role: string;
  snippet: string;
  timestamp: number;
  tool_name: string | null;
  source: string;
  model: string | null;
  session_started: number;
  context: ContextMessage[];
}

export interface ContextMessage {
  role: string;
  content: string;
}

export interface SearchOptions {
  /** Only these sources; an empty array matches nothing. */
  sourceFilter?: string[] | null;
  /** Never these sources; an empty array filters nothing. */
  excludeSources?: string[] | null;
  roleFilter?: string[] | null;
  /** Default 20. */
  limit?: number;
  /** Default 0. */
  offset?: number;
}

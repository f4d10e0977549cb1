/**
 * The sessions of the contract: the row of `sessions` (snake_case, as stored, so exports stay
 * interchangeable with the reference Python implementation), what listings, exports and imports
 * give, and the camelCase options of the session methods of `SessionDB`.
 */
import type { MessageRow } from "./message-types.js";

/** The 26 columns of `sessions`. */
export interface SessionRow {
  id: string;
  source: string;
  user_id: string | null;
  model: string | null;
  /** JSON text, as stored. */
  model_config: string | null;
  system_prompt: string | null;
  parent_session_id: string | null;
  started_at: number;
  ended_at: number | null;
  end_reason: string | null;
  message_count: number;
  tool_call_count: number;
  input_tokens: number | null;
  output_tokens: number | null;
  cache_read_tokens: number | null;
  cache_write_tokens: number | null;
  reasoning_tokens: number | null;
  billing_provider: string | null;
  billing_base_url: string | null;
  billing_mode: string | null;
  estimated_cost_usd: number | null;
  actual_cost_usd: number | null;
  cost_status: string | null;
  cost_source: string | null;
  pricing_version: string | null;
  title: string | null;
}

/** A row of the rich listing. */
export interface RichSessionRow extends SessionRow {
  last_active: number;
  preview: string;
  /** Present when the row was projected onto the tip of its compression chain. */
  _lineage_root_id?: string;
}

/** A session row plus its messages: one line of an export. */
export interface SessionExport extends SessionRow {
  messages: MessageRow[];
}

/** Sessions and messages of one source, for statistics. */
export interface SourceCount {
  source: string;
  sessions: number;
  messages: number;
}

export interface CreateSessionOptions {
  model?: string | null;
  modelConfig?: unknown;
  systemPrompt?: string | null;
  userId?: string | null;
  parentSessionId?: string | null;
}

export interface TokenUsage {
  inputTokens?: number | null;
  outputTokens?: number | null;
  cacheReadTokens?: number | null;
  cacheWriteTokens?: number | null;
  reasoningTokens?: number | null;
  model?: string | null;
  estimatedCostUsd?: number | null;
  actualCostUsd?: number | null;
  costStatus?: string | null;
  costSource?: string | null;
  pricingVersion?: string | null;
  billingProvider?: string | null;
  billingBaseUrl?: string | null;
  billingMode?: string | null;
}

export interface TokenUpdateOptions {
  /** Set the totals instead of adding to them (the gateway keeps running totals). */
  absolute?: boolean;
}

export interface ListSessionsOptions {
  source?: string | null;
  excludeSources?: string[] | null;
  /** Default 20. */
  limit?: number;
  /** Default 0. */
  offset?: number;
  /** Default false: only sessions without a parent. */
  includeChildren?: boolean;
  /** Default true: a compressed root shows its chain's tip. */
  projectCompressionTips?: boolean;
}

export interface SearchSessionsOptions {
  source?: string | null;
  /** Default 20. */
  limit?: number;
  offset?: number;
}

export interface PruneOptions {
  /** Default 90. */
  olderThanDays?: number;
  source?: string | null;
}

export interface ExportOptions {
  source?: string | null;
}

export interface ImportOptions {
  /** Import a session whose parent is missing anyway, with no parent. Default false. */
  detachMissingParent?: boolean;
}

/** What `importSession` did with one exported session. */
export interface ImportResult {
  /**
   * `"imported"`; `"exists"`: a session with this id is already there, nothing was written;
   * `"parent-missing"`: its parent session is not in the database (and `detachMissingParent`
   * was not given), nothing was written.
   */
  status: "imported" | "exists" | "parent-missing";
  /** Messages written. */
  messages: number;
  /**
   * The messages got new ids (in their exported order) because an exported id was taken.
   * Messages exported without an id always get a new one.
   */
  renumbered: boolean;
  /** Imported with `parent_session_id` NULL because the parent is missing (`detachMissingParent`). */
  parentDetached: boolean;
}

/** The token counters and billing fields of `updateTokenCounts` (SPEC §3), as both engines store them. */
import { invalidArgument, type SessionDBError } from "../errors.js";

/** Each counter's key in `usage` and its column. */
export const TOKEN_FIELDS = [
  ["inputTokens", "input_tokens"],
  ["outputTokens", "output_tokens"],
  ["cacheReadTokens", "cache_read_tokens"],
  ["cacheWriteTokens", "cache_write_tokens"],
  ["reasoningTokens", "reasoning_tokens"],
] as const;

/** The text fields of `usage` and their columns. */
export const TEXT_FIELDS = [
  ["costStatus", "cost_status"],
  ["costSource", "cost_source"],
  ["pricingVersion", "pricing_version"],
  ["billingProvider", "billing_provider"],
  ["billingBaseUrl", "billing_base_url"],
  ["billingMode", "billing_mode"],
  ["model", "model"],
] as const;

/** The refusal of a counter addition that would pass ±2^63 (the same words on both engines). */
export function counterOverflow(key: string, value: unknown): SessionDBError {
  return invalidArgument(
    `usage.${key}: adding ${String(value)} would take the counter past the 64-bit integer range (2^63 - 1); nothing was applied`,
  );
}

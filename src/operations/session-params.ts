/** The argument checks of the session operations (SPEC §3, createSession … pruneSessions). */
import { invalidArgument } from "../errors.js";
import type { OpName } from "../operation-catalogue.js";
import {
  checkTotalText, count, field, jsonColumn, nonEmpty, optBool, optBoundCount, optCount, optNumber, optObject, optStr,
  optText, str, type Args,
} from "./args.js";
import { TEXT_FIELDS, TOKEN_FIELDS } from "./token-counts.js";

export function parseCreateSession(args: Args, op: OpName) {
  const opts = optObject(args[2], "opts");
  const source = args[1];
  if (source === undefined || source === null || source === "") {
    throw invalidArgument("source is required and must be a non-empty string");
  }
  const params = {
    id: nonEmpty(args[0], "id"),
    source: str(source, "source"),
    model: optStr(field(opts, "model"), "opts.model"),
    modelConfig: jsonColumn(opts, "modelConfig", "opts").text,
    systemPrompt: optText(field(opts, "systemPrompt"), "opts.systemPrompt"),
    userId: optStr(field(opts, "userId"), "opts.userId"),
    parentSessionId: optStr(field(opts, "parentSessionId"), "opts.parentSessionId"),
  };
  checkTotalText(op, [params.modelConfig, params.systemPrompt]);
  return params;
}

export const parseEnsureSession = (args: Args) => ({
  id: nonEmpty(args[0], "id"),
  source: optStr(args[1], "source") || "unknown",
  model: optStr(args[2], "model"),
});

export const parseEndSession = (args: Args) => ({ id: str(args[0], "id"), endReason: str(args[1], "endReason") });

/** The operations that take a session's id and nothing else. */
export const parseSessionId = (args: Args) => ({ id: str(args[0], "id") });

export const parseUpdateSystemPrompt = (args: Args) => ({ id: str(args[0], "id"), systemPrompt: optText(args[1], "systemPrompt") });

export function parseUpdateTokenCounts(args: Args) {
  const usage = optObject(args[1], "usage");
  const opts = optObject(args[2], "opts");
  const params: Record<string, string | number | Uint8Array | null> = { id: str(args[0], "id") };
  for (const [key, col] of TOKEN_FIELDS) {
    const bound = optBoundCount(field(usage, `${key}Bound`), `usage.${key}Bound`);
    const value = bound === null ? optCount(field(usage, key), `usage.${key}`) : 0;
    params[col] = value === undefined ? 0 : value; // left out counts as 0; an explicit null writes NULL
    params[`${col}_bound`] = bound;
  }
  params.estimated = optNumber(field(usage, "estimatedCostUsd"), "usage.estimatedCostUsd") ?? null;
  params.actual = optNumber(field(usage, "actualCostUsd"), "usage.actualCostUsd") ?? null;
  for (const [key, col] of TEXT_FIELDS) params[col] = optStr(field(usage, key), `usage.${key}`);
  return { absolute: optBool(field(opts, "absolute"), "opts.absolute", false), params };
}

export const parseResolveSessionId = (args: Args) => ({ idOrPrefix: str(args[0], "idOrPrefix") });

/** Most ids `sessionIdsByPrefix` returns. */
const MAX_PREFIX_MATCHES = 1000;

export function parseSessionIdsByPrefix(args: Args) {
  const opts = optObject(args[1], "opts");
  return { prefix: str(args[0], "prefix"), limit: count(field(opts, "limit"), "opts.limit", 20, MAX_PREFIX_MATCHES) };
}

export function parseSearchSessions(args: Args) {
  const opts = optObject(args[0], "opts");
  return {
    source: optStr(field(opts, "source"), "opts.source"),
    limit: count(field(opts, "limit"), "opts.limit", 20),
    offset: count(field(opts, "offset"), "opts.offset", 0, Number.MAX_SAFE_INTEGER),
  };
}

/** The operations whose only argument is `{ source }`. */
export const parseSourceFilter = (args: Args) => ({ source: optStr(field(optObject(args[0], "opts"), "source"), "opts.source") });

export function parsePruneSessions(args: Args) {
  const opts = optObject(args[0], "opts");
  const days = optNumber(field(opts, "olderThanDays"), "opts.olderThanDays") ?? 90;
  if (days < 0) throw invalidArgument(`opts.olderThanDays must not be negative, got ${days}`);
  return { olderThanDays: days, source: optStr(field(opts, "source"), "opts.source") };
}

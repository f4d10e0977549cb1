/**
 * The argument check of `importSession` (one exported session, a line of `exportAll`): every
 * column checked as the API would, messages put in the export's `(timestamp, id)` order.
 */
import { invalidArgument } from "../errors.js";
import {
  field, nonEmpty, optBool, optCount, optInteger, optJson, optNumber, optObject, optStr, optText, truthy, type Args,
} from "./args.js";
import { toolCallCount } from "./message-params.js";
import { MESSAGE_COLUMNS, SESSION_COLUMNS } from "./rows.js";
import { sanitizeTitle } from "./title-sanitizer.js";

/** Most messages one imported session may hold. */
export const MAX_IMPORT_MESSAGES = 1_000_000;

type Value = string | number | null;
export type SessionValues = Record<(typeof SESSION_COLUMNS)[number], Value>;
/** A message's columns as they will be stored; `id` is the exported one (null when absent). */
export type MessageValues = Record<(typeof MESSAGE_COLUMNS)[number], Value>;

export interface ImportParams {
  session: SessionValues;
  /** In insertion order: the exported `(timestamp, id)` order. */
  messages: MessageValues[];
  /** Every message came with an id, and no id is repeated: the ids may be kept. */
  idsUsable: boolean;
  detachMissingParent: boolean;
}

type ColumnParser = (value: unknown, name: string) => Value;

function requiredNumber(value: unknown, name: string): number {
  const n = optNumber(value, name);
  if (n === undefined || n === null) throw invalidArgument(`${name} is required and must be a finite number`);
  return n;
}

const optionalNumber: ColumnParser = (value, name) => optNumber(value, name) ?? null;

/** A token counter: absent gives the column default 0, an explicit null stays NULL. */
const tokenCounter: ColumnParser = (value, name) => {
  const n = optCount(value, name);
  return n === undefined ? 0 : n;
};

/**
 * `tool_calls` as stored: any non-null value is kept (also `[]` and `{}`, which `appendMessage`
 * stores as NULL), so that re-exporting gives back exactly what was read.
 */
const toolCallsText: ColumnParser = (value, name) => {
  if (value === undefined || value === null) return null;
  return truthy(value) ? optJson(value, name) : JSON.stringify(value);
};

/** How each column of a session line is checked; the counters are recomputed instead. */
const SESSION_PARSERS: Record<Exclude<keyof SessionValues, "message_count" | "tool_call_count">, ColumnParser> = {
  id: nonEmpty,
  source: nonEmpty,
  user_id: optStr,
  model: optStr,
  model_config: optText,
  system_prompt: optText,
  parent_session_id: optStr,
  started_at: requiredNumber,
  ended_at: optionalNumber,
  end_reason: optStr,
  input_tokens: tokenCounter,
  output_tokens: tokenCounter,
  cache_read_tokens: tokenCounter,
  cache_write_tokens: tokenCounter,
  reasoning_tokens: tokenCounter,
  billing_provider: optStr,
  billing_base_url: optStr,
  billing_mode: optStr,
  estimated_cost_usd: optionalNumber,
  actual_cost_usd: optionalNumber,
  cost_status: optStr,
  cost_source: optStr,
  pricing_version: optStr,
  // Cleaned as setSessionTitle does (a clean title stays as it is), so no import brings in a title the API refuses.
  title: (value, name) => sanitizeTitle(optStr(value, name)),
};

const MESSAGE_PARSERS: Record<Exclude<keyof MessageValues, "id" | "session_id">, ColumnParser> = {
  role: nonEmpty,
  content: optText,
  tool_call_id: optStr,
  tool_calls: toolCallsText,
  tool_name: optStr,
  timestamp: requiredNumber,
  token_count: optInteger,
  finish_reason: optStr,
  reasoning: optText,
  // Kept as the JSON text they are stored and exported as.
  reasoning_details: optText,
  codex_reasoning_items: optText,
};

function parseColumns<K extends string>(obj: Readonly<Record<string, unknown>>, parsers: Record<K, ColumnParser>, prefix: string) {
  const values = {} as Record<K, Value>;
  for (const key of Object.keys(parsers) as K[]) values[key] = parsers[key](field(obj, key), `${prefix}.${key}`);
  return values;
}

function asObject(value: unknown, name: string): Readonly<Record<string, unknown>> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw invalidArgument(`${name} must be an object`);
  return value as Record<string, unknown>;
}

/** As `appendMessage` counts them: an array's length, 1 for any other value, 0 for none. */
function parseMessage(value: unknown, name: string, sessionId: string): MessageValues {
  const m = asObject(value, name);
  const id = optInteger(field(m, "id"), `${name}.id`);
  if (id !== null && id <= 0) throw invalidArgument(`${name}.id must be a positive integer, got ${id}`);
  const owner = optStr(field(m, "session_id"), `${name}.session_id`);
  if (owner !== null && owner !== sessionId) {
    throw invalidArgument(`${name}.session_id is ${JSON.stringify(owner)}, not the session's id ${JSON.stringify(sessionId)}`);
  }
  return { id, session_id: sessionId, ...parseColumns(m, MESSAGE_PARSERS, name) };
}

export function parseImportSession(args: Args): ImportParams {
  const s = asObject(args[0], "session (one line of an export)");
  const columns = parseColumns(s, SESSION_PARSERS, "session");
  const raw = field(s, "messages");
  if (!Array.isArray(raw)) throw invalidArgument("session.messages must be an array");
  if (raw.length > MAX_IMPORT_MESSAGES) {
    throw invalidArgument(`session.messages has too many entries (${raw.length}, max ${MAX_IMPORT_MESSAGES})`);
  }
  const sessionId = columns.id as string;
  // Array.from, not map: map skips the holes of a sparse array, which must fail like any non-object.
  const parsed = Array.from(raw, (value: unknown, index) => ({
    index,
    message: parseMessage(value, `session.messages[${index}]`, sessionId),
  }));
  // The order an export has, `(timestamp, id)`, whatever order the lines were edited into.
  const key = (m: MessageValues) => [m.timestamp as number, (m.id as number | null) ?? Infinity] as const;
  parsed.sort((a, b) => {
    const [ta, ia] = key(a.message);
    const [tb, ib] = key(b.message);
    return ta - tb || ia - ib || a.index - b.index;
  });
  const messages = parsed.map((p) => p.message);
  const ids = new Set(messages.map((m) => m.id));
  return {
    session: {
      ...columns,
      message_count: messages.length,
      tool_call_count: raw.reduce((n: number, m: unknown) => n + toolCallCount(field(m as Record<string, unknown>, "tool_calls")), 0),
    },
    messages,
    idsUsable: !ids.has(null) && ids.size === messages.length,
    detachMissingParent: optBool(field(optObject(args[1], "opts"), "detachMissingParent"), "opts.detachMissingParent", false),
  };
}

/**
 * What every contract test needs: a fresh database file in its own temp dir, closed and removed
 * after the test, and assertions on coded rejections.
 */
import assert from "node:assert/strict";
import path from "node:path";
import type { TestContext } from "node:test";
import { SessionDBError, type ErrorCode, type SessionDB } from "../../src/index.js";
import { rawUpdate } from "../helpers/raw-db.js";
import { tempDir } from "../helpers/temp-dir.js";

/**
 * Opens the implementation under test on a database. `location`, when given, makes each test's
 * database (a fresh PostgreSQL database's URL); else it is a new file in the test's temp dir.
 */
export type Opener = ((dbPath: string) => Promise<SessionDB>) & { location?: (t: TestContext) => string };

export interface Fixture {
  readonly db: SessionDB;
  /** The database file (or URL), for raw connections. */
  readonly path: string;
}

/** A store on a new file in a new temp dir; both go away when the test ends. */
export async function fresh(t: TestContext, open: Opener): Promise<Fixture> {
  let db: SessionDB | undefined;
  t.after(() => db?.close()); // registered first, so the handle closes before the dir goes
  const dbPath = open.location?.(t) ?? path.join(tempDir(t), "state.db");
  db = await open(dbPath);
  return { db, path: dbPath };
}

/**
 * Calls `call`, which must return a promise (never throw synchronously), and checks that the
 * promise rejects with a `SessionDBError` of this code (and, when given, this exact message).
 */
export async function expectCode(
  call: () => PromiseLike<unknown>,
  code: ErrorCode,
  message?: string,
): Promise<SessionDBError> {
  let pending: PromiseLike<unknown>;
  try {
    pending = call();
  } catch (err) {
    assert.fail(`threw synchronously instead of returning a rejected promise: ${String(err)}`);
  }
  assert.equal(typeof pending?.then, "function", "the method must return a promise");
  let caught: unknown;
  await assert.rejects(Promise.resolve(pending), (err: unknown) => {
    caught = err;
    return true;
  });
  assert.ok(caught instanceof SessionDBError, `expected a SessionDBError, got ${String(caught)}`);
  assert.equal(caught.code, code, `expected code ${code}, got ${caught.code}: ${caught.message}`);
  if (message !== undefined) assert.equal(caught.message, message);
  return caught;
}

/** Reads a whole async iterable. */
export async function drain<T>(iterable: AsyncIterable<T>): Promise<T[]> {
  const items: T[] = [];
  for await (const item of iterable) items.push(item);
  return items;
}

/** A fixed point in time, so tests that set times read plainly: `T0 + 100`. */
export const T0 = 1_700_000_000;

/** Sets a session's times (or other columns) as another process would. */
export function setSession(dbPath: string, id: string, values: Record<string, unknown>): void {
  rawUpdate(dbPath, "sessions", id, values);
}

/** Sets a message's timestamp (or other columns) as another process would. */
export function setMessage(dbPath: string, id: number, values: Record<string, unknown>): void {
  rawUpdate(dbPath, "messages", id, values);
}

// The column lists of SPEC §1, written out here rather than imported, so a column the code
// drops (or adds) shows up as a failure.
export const SESSION_KEYS = [
  "id", "source", "user_id", "model", "model_config", "system_prompt", "parent_session_id",
  "started_at", "ended_at", "end_reason", "message_count", "tool_call_count", "input_tokens",
  "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens",
  "billing_provider", "billing_base_url", "billing_mode", "estimated_cost_usd", "actual_cost_usd",
  "cost_status", "cost_source", "pricing_version", "title",
].sort();

export const MESSAGE_KEYS = [
  "id", "session_id", "role", "content", "tool_call_id", "tool_calls", "tool_name", "timestamp",
  "token_count", "finish_reason", "reasoning", "reasoning_details", "codex_reasoning_items",
].sort();

export function sortedKeys(value: object): string[] {
  return Object.keys(value).sort();
}

/** Seconds since the epoch, as the store writes them. */
export function nowSeconds(): number {
  return Date.now() / 1000;
}

/**
 * Replaying a spool (docs/spool.md): each pending record sent again with its own key, in order,
 * by whoever can write (the daemon, a direct-mode handle, the handle that spooled it, `sessiondb
 * spool replay`). A key is applied at most once, so a replay cut short is safe to run again.
 */
import { SessionDBError, toSessionDBError, type ErrorCode } from "../errors.js";
import { isWriteOp, OPERATIONS, type WriteOpName } from "../operation-catalogue.js";
import type { SessionDB } from "../session-db.js";
import type { SpoolFile, SpoolRecord } from "./spool-file.js";

/**
 * The failures a write is spooled after, and a replay stops at (the record stays): the store could
 * not be reached or stayed locked. The Python client's SPOOLED_CODES.
 */
export const SPOOLED_CODES: ReadonlySet<ErrorCode> = new Set<ErrorCode>(["UNAVAILABLE", "OUTCOME_UNKNOWN", "TIMEOUT", "BUSY", "OVERLOADED"]);

/**
 * The answers that refuse a record for good: they are about the record itself (a key applied with
 * other arguments, a constraint, arguments that are wrong), so replaying it again changes nothing
 * and it is acknowledged and dropped. Any other failure (the disk full, a read-only file, the
 * handle closed) is about the store: the replay stops and the record stays.
 */
export const REFUSED_FOR_GOOD: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  "IDEMPOTENCY_CONFLICT", "CONSTRAINT", "INVALID_ARGUMENT", "TITLE_TOO_LONG", "TITLE_IN_USE", "NOT_FOUND", "FRAME_TOO_LARGE",
]);

/** Whether `op` is a write the spool takes: every keyed write but importSession (the Python client's KEYED_OPS). */
export function isSpooledOp(op: string): op is WriteOpName {
  return isWriteOp(op) && op !== "importSession";
}

/** What a replay did: records applied, and records the store refused for good (dropped). */
export interface ReplayResult {
  applied: number;
  refused: Array<{ key: string; op: string; code: ErrorCode; message: string }>;
}

/** Sends one record (its op, its wire arguments, its key) to a store; resolves once applied. */
export type ApplyRecord = (op: WriteOpName, args: unknown[], key: string) => Promise<unknown>;

/**
 * The arguments a record is replayed with: its wire arguments, checked to be a spooled op's (a
 * record that is not is refused for good), a message given the record's `ts` (the Python
 * client's replay_args).
 */
export function recordCall(record: SpoolRecord): { op: WriteOpName; args: unknown[] } {
  if (!isSpooledOp(record.op)) throw new SessionDBError("INVALID_ARGUMENT", `a spooled ${JSON.stringify(record.op)} is no write this sessiondb replays`);
  if (record.args.length > OPERATIONS[record.op].maxArgs) {
    throw new SessionDBError("INVALID_ARGUMENT", `a spooled ${record.op} has ${record.args.length} arguments, at most ${OPERATIONS[record.op].maxArgs}`);
  }
  const [sessionId, msg, ...rest] = record.args;
  // A message without a timestamp of its own gets the record's: it sorts where it was written, not
  // where it was replayed. (Had its first send been applied after all, its key answers
  // IDEMPOTENCY_CONFLICT: applied once, and the record is dropped.)
  if (record.op === "appendMessage" && isPlainObject(msg) && (msg.timestamp === undefined || msg.timestamp === null)) {
    return { op: record.op, args: [sessionId, { ...msg, timestamp: record.ts }, ...rest] };
  }
  return { op: record.op, args: record.args };
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * Applies the spool's pending records in order, each acknowledged once applied or refused for
 * good (REFUSED_FOR_GOOD). Rejects with the error of the first that cannot be applied yet: it and
 * those after it stay pending.
 */
export async function replaySpool(spool: SpoolFile, apply: ApplyRecord): Promise<ReplayResult> {
  const result: ReplayResult = { applied: 0, refused: [] };
  for (const record of await spool.pending()) {
    try {
      const { op, args } = recordCall(record);
      await apply(op, args, record.key);
      result.applied++;
    } catch (err) {
      const e = toSessionDBError(err);
      if (!REFUSED_FOR_GOOD.has(e.code)) throw e;
      result.refused.push({ key: record.key, op: record.op, code: e.code, message: e.message });
    }
    await spool.acknowledge(record.key);
  }
  return result;
}

/** Records applied through a handle's own methods: the arguments, then `{ idempotencyKey }` in its place. */
export function applyBy(db: SessionDB): ApplyRecord {
  return (op, args, key) => {
    const padded: unknown[] = [...args];
    while (padded.length < OPERATIONS[op].maxArgs) padded.push(undefined);
    const method = db[op] as unknown as (...a: unknown[]) => Promise<unknown>;
    return method.apply(db, [...padded, { idempotencyKey: key }]);
  };
}

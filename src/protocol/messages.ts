/** Messages of the wire protocol, version 1 (SPEC §6), and their checks. */
import { invalidArgument, SessionDBError, type WireError } from "../errors.js";
import { isWireOp, isWriteOp, type WireOpName } from "../operation-catalogue.js";
import { parseKey } from "../operations/idempotency-keys.js";
import { isControlOp, type ControlOp } from "./control.js";

export const PROTOCOL_VERSION = 1;

export interface Request {
  id: number;
  op: WireOpName | ControlOp;
  args: unknown[];
  /** Optional: how long the client will wait, from when the daemon reads the request; a write
   *  not started by then is never applied. */
  timeoutMs?: number;
  /** Optional: the same deadline in ms since the epoch (client and daemon share the host's
   *  clock). The earlier of the two counts, so a request that waited in a stalled daemon's socket
   *  buffer past the client's deadline is not started when the daemon wakes. */
  deadlineEpochMs?: number;
  /** Optional, writes only: the write's idempotency key (1–256 characters), applied once per key. */
  idempotencyKey?: string;
}

export type Response =
  | { id: number; ok: true; result: unknown }
  | { id: number; ok: false; error: WireError };

export interface Chunk {
  id: number;
  chunk: unknown[];
}

const MAX_REQUEST_ID = 2 ** 32 - 1;

/** The request's id when it has a usable one (so an error can still be matched), else 0. */
export function requestIdOf(value: unknown): number {
  const id = (value as { id?: unknown } | null)?.id;
  return typeof id === "number" && Number.isInteger(id) && id >= 0 && id <= MAX_REQUEST_ID ? id : 0;
}

/** Checks the shape of a decoded request frame; the arguments are checked later, per operation. */
export function parseRequest(value: unknown): Request {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new SessionDBError("PROTOCOL", "a request must be a map with id, op and args");
  }
  const { id, op, args, timeoutMs, deadlineEpochMs, idempotencyKey } = value as Record<string, unknown>;
  if (typeof id !== "number" || !Number.isInteger(id) || id < 0 || id > MAX_REQUEST_ID) {
    throw new SessionDBError("PROTOCOL", "request id must be an unsigned 32-bit integer");
  }
  if (!isWireOp(op) && !isControlOp(op)) {
    throw new SessionDBError("PROTOCOL", `unknown op ${JSON.stringify(String(op)).slice(0, 80)}`);
  }
  if (args !== undefined && args !== null && !Array.isArray(args)) {
    throw new SessionDBError("PROTOCOL", "request args must be an array");
  }
  if (timeoutMs !== undefined && timeoutMs !== null && (typeof timeoutMs !== "number" || !(timeoutMs > 0))) {
    throw new SessionDBError("PROTOCOL", "request timeoutMs must be a positive number");
  }
  if (deadlineEpochMs !== undefined && deadlineEpochMs !== null && (typeof deadlineEpochMs !== "number" || !(deadlineEpochMs > 0))) {
    throw new SessionDBError("PROTOCOL", "request deadlineEpochMs must be a positive number");
  }
  const key = parseKey(idempotencyKey, op);
  if (key !== null && !isWriteOp(op)) throw invalidArgument(`${op}: idempotencyKey is for writes; ${op} changes nothing`);
  return {
    id,
    op,
    args: (args as unknown[] | null | undefined) ?? [],
    ...(typeof timeoutMs === "number" ? { timeoutMs } : {}),
    ...(typeof deadlineEpochMs === "number" ? { deadlineEpochMs } : {}),
    ...(key !== null ? { idempotencyKey: key } : {}),
  };
}

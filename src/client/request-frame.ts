import { invalidArgument } from "../errors.js";
import type { OpName } from "../operation-catalogue.js";
import type { ControlOp } from "../protocol/control.js";
import { encodeFrame } from "../protocol/frame-codec.js";
import { DEFAULT_MAX_FRAME_BYTES, HEADER_BYTES } from "../protocol/frame-limits.js";
import { checkPlainMessagePack } from "../protocol/plain-msgpack-validator.js";
import { encodePlainRequest } from "./plain-request-encoder.js";

/**
 * The request's frame. Arguments MessagePack cannot carry as plain values (a cycle; a Date, Set
 * or typed array, which become extension types the daemon refuses by closing the connection),
 * and requests larger than the daemon's frame limit (which it also answers by closing the
 * connection), fail this request alone with INVALID_ARGUMENT, before anything is sent.
 * `timeoutMs` is the time the request has left; `deadlineEpochMs` the same instant on the clock;
 * `idempotencyKey` a write's key (null: none). Plain arguments (nearly all) are written by
 * plain-request-encoder.ts, plain by construction; the rest are encoded by msgpackr and checked.
 */
export function requestFrame(
  id: number, op: OpName | ControlOp, args: unknown[], timeoutMs: number, deadlineEpochMs: number, idempotencyKey: string | null,
): Buffer {
  let frame = encodePlainRequest(id, op, args, timeoutMs, deadlineEpochMs, idempotencyKey);
  if (frame === null) {
    try {
      frame = encodeFrame(idempotencyKey === null ? { id, op, args, timeoutMs, deadlineEpochMs } : { id, op, args, timeoutMs, deadlineEpochMs, idempotencyKey });
      checkPlainMessagePack(frame.subarray(HEADER_BYTES));
    } catch (err) {
      throw invalidArgument(`${op}: the arguments cannot be sent to the daemon: ${(err as Error).message}`);
    }
  }
  const bytes = frame.length - HEADER_BYTES;
  if (bytes > DEFAULT_MAX_FRAME_BYTES) {
    // Same code and wording as direct mode's limit on a request's text fields (15 MiB together,
    // which always fits a frame); the engine's checks are not loaded here, so the client never
    // loads the SQLite driver.
    throw invalidArgument(`${op} is too large: the request is ${bytes} bytes, more than the ${DEFAULT_MAX_FRAME_BYTES} bytes the daemon accepts in one frame`);
  }
  return frame;
}

/** Trailing undefined arguments are left out, so "not given" stays "not given" on the daemon. */
export function trimUndefined(args: readonly unknown[]): unknown[] {
  let end = args.length;
  while (end > 0 && args[end - 1] === undefined) end--;
  return args.slice(0, end);
}

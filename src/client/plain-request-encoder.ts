/**
 * A request's frame written straight from its values when they are plain data (strings, numbers,
 * booleans, null, arrays and plain objects, as nearly every call's are): the bytes msgpackr would
 * write, with the length prefix in place, and no walk of the bytes afterwards (what is written
 * here is plain MessagePack by construction, within the limits). A client process making one
 * call at a time never runs its code often enough for the JIT to optimize msgpackr's generic
 * encoder, so that encoder and the check after it were most of the library's CPU per call. Anything
 * else (a Date, a Map, a typed array, a bigint, a class instance, nesting or counts near the
 * limits) is not judged here: null, and requestFrame takes the general path, which encodes and
 * judges it as before.
 */
import { HEADER_BYTES, MAX_DEPTH, MAX_ELEMENTS } from "../protocol/frame-limits.js";

/** Buffers requests are written into, one after the other; a frame handed out is never written over. */
const SLAB_BYTES = 64 * 1024;
/** A frame starts in a fresh slab when less than this is left, or when a large frame grew this one past LARGE_SLAB_BYTES. */
const MIN_ROOM = 2048;
const LARGE_SLAB_BYTES = 16 * SLAB_BYTES;
/** Deeper or larger than this, the general path judges it (the validator's limits, with room for the envelope). */
const DEPTH_LIMIT = MAX_DEPTH - 8;
const ELEMENT_LIMIT = MAX_ELEMENTS / 2;

/** `Buffer#utf8Write` (as msgpackr uses it): writes without the encoding lookup of `write`. */
type Utf8Buffer = Buffer & { utf8Write(text: string, offset: number, length: number): number };

let slab = Buffer.allocUnsafeSlow(SLAB_BYTES) as Utf8Buffer;
let start = 0;
let at = 0;
let elements = 0;

/** The envelope's keys, encoded once (fixstr each). */
const KEY_ID = key("id");
const KEY_OP = key("op");
const KEY_ARGS = key("args");
const KEY_TIMEOUT = key("timeoutMs");
const KEY_DEADLINE = key("deadlineEpochMs");
const KEY_IDEMPOTENCY = key("idempotencyKey");

function key(name: string): Buffer {
  return Buffer.concat([Buffer.from([0xa0 | name.length]), Buffer.from(name, "latin1")]);
}

/** The frame `{id, op, args, timeoutMs, deadlineEpochMs, idempotencyKey?}`, or null when its args are not plain data. */
export function encodePlainRequest(
  id: number, op: string, args: readonly unknown[], timeoutMs: number, deadlineEpochMs: number, idempotencyKey: string | null,
): Buffer | null {
  if (slab.length - at < MIN_ROOM || slab.length > LARGE_SLAB_BYTES) newSlab(0);
  start = at;
  at += HEADER_BYTES;
  elements = 0;
  slab[at++] = idempotencyKey === null ? 0x85 : 0x86;
  putKey(KEY_ID);
  putNumber(id);
  putKey(KEY_OP);
  putString(op);
  putKey(KEY_ARGS);
  if (!putArray(args, 1)) {
    at = start;
    return null;
  }
  putKey(KEY_TIMEOUT);
  putNumber(timeoutMs);
  putKey(KEY_DEADLINE);
  putNumber(deadlineEpochMs);
  if (idempotencyKey !== null) {
    putKey(KEY_IDEMPOTENCY);
    putString(idempotencyKey);
  }
  const frame = slab.subarray(start, at);
  frame.writeUInt32BE(at - start - HEADER_BYTES, 0);
  start = at;
  return frame;
}

/** Room for `n` more bytes of the frame being written: a larger slab, the frame so far copied to it. */
function room(n: number): void {
  if (at + n > slab.length) newSlab(n);
}

function newSlab(n: number): void {
  const written = at - start;
  const next = Buffer.allocUnsafeSlow(Math.max(SLAB_BYTES, (written + n) * 2)) as Utf8Buffer;
  slab.copy(next, 0, start, at);
  slab = next;
  start = 0;
  at = written;
}

function putKey(bytes: Buffer): void {
  room(bytes.length);
  // By hand: a few bytes, where a native copy's call costs more than the copy.
  for (let i = 0; i < bytes.length; i++) slab[at++] = bytes[i]!;
}

/** A value: false when it is not plain data (nothing more is written then; the frame is dropped). */
function putValue(value: unknown, depth: number): boolean {
  if (++elements > ELEMENT_LIMIT) return false;
  switch (typeof value) {
    case "string":
      putString(value);
      return true;
    case "number":
      putNumber(value);
      return true;
    case "boolean":
      room(1);
      slab[at++] = value ? 0xc3 : 0xc2;
      return true;
    case "undefined":
      // In an array (msgpackr's encodeUndefinedAsNil); an object's undefined properties are left out.
      room(1);
      slab[at++] = 0xc0;
      return true;
    case "object": {
      if (value === null) {
        room(1);
        slab[at++] = 0xc0;
        return true;
      }
      if (depth >= DEPTH_LIMIT) return false;
      const proto = Object.getPrototypeOf(value) as unknown;
      if (proto === Array.prototype) return putArray(value as unknown[], depth + 1);
      if (proto === Object.prototype || proto === null) return putObject(value as Record<string, unknown>, depth + 1);
      return false;
    }
    default:
      return false;
  }
}

function putArray(items: readonly unknown[], depth: number): boolean {
  const n = items.length;
  putCount(n, 0x90, 0xdc);
  for (let i = 0; i < n; i++) if (!putValue(items[i], depth)) return false;
  return true;
}

function putObject(object: Record<string, unknown>, depth: number): boolean {
  const keys = Object.keys(object);
  let n = 0;
  for (const k of keys) if (object[k] !== undefined) n++;
  putCount(n, 0x80, 0xde);
  for (const k of keys) {
    const item = object[k];
    if (item === undefined) continue;
    ++elements;
    putString(k);
    if (!putValue(item, depth)) return false;
  }
  return true;
}

/** An array's or a map's header: fix form, then 16- or 32-bit (a 32-bit one's marker is the 16-bit one's plus 1). */
function putCount(n: number, fix: number, sixteen: number): void {
  room(5);
  if (n < 16) slab[at++] = fix | n;
  else if (n < 0x10000) {
    slab[at++] = sixteen;
    slab[at++] = n >> 8;
    slab[at++] = n & 0xff;
  } else {
    slab[at++] = sixteen + 1;
    slab.writeUInt32BE(n, at);
    at += 4;
  }
}

/** As msgpackr writes a number: the smallest integer form within 32 bits, else a float 64. */
function putNumber(value: number): void {
  room(9);
  if (value >>> 0 === value) {
    if (value < 0x80) slab[at++] = value;
    else if (value < 0x100) {
      slab[at++] = 0xcc;
      slab[at++] = value;
    } else if (value < 0x10000) {
      slab[at++] = 0xcd;
      slab[at++] = value >> 8;
      slab[at++] = value & 0xff;
    } else {
      slab[at++] = 0xce;
      slab.writeUInt32BE(value, at);
      at += 4;
    }
  } else if (value >> 0 === value) {
    if (value >= -0x20) slab[at++] = 0x100 + value;
    else if (value >= -0x80) {
      slab[at++] = 0xd0;
      slab[at++] = value + 0x100;
    } else if (value >= -0x8000) {
      slab[at++] = 0xd1;
      slab.writeInt16BE(value, at);
      at += 2;
    } else {
      slab[at++] = 0xd2;
      slab.writeInt32BE(value, at);
      at += 4;
    }
  } else {
    slab[at++] = 0xcb;
    slab.writeDoubleBE(value, at);
    at += 8;
  }
}

/** UTF-8, a lone surrogate as U+FFFD (as msgpackr and TextEncoder write it). Short ASCII by hand, the rest natively. */
function putString(text: string): void {
  const n = text.length;
  if (n < 32) {
    room(1 + n);
    let p = at + 1;
    let i = 0;
    for (; i < n; i++) {
      const c = text.charCodeAt(i);
      if (c >= 0x80) break;
      slab[p++] = c;
    }
    if (i === n) {
      slab[at] = 0xa0 | n;
      at = p;
      return;
    }
  }
  const bytes = Buffer.byteLength(text, "utf8");
  room(5 + bytes);
  if (bytes < 32) slab[at++] = 0xa0 | bytes;
  else if (bytes < 0x100) {
    slab[at++] = 0xd9;
    slab[at++] = bytes;
  } else if (bytes < 0x10000) {
    slab[at++] = 0xda;
    slab[at++] = bytes >> 8;
    slab[at++] = bytes & 0xff;
  } else {
    slab[at++] = 0xdb;
    slab.writeUInt32BE(bytes, at);
    at += 4;
  }
  at += slab.utf8Write(text, at, bytes);
}

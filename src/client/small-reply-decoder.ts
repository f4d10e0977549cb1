/**
 * A small reply decoded by hand: a write's answer (`{id, ok, result}` with an id, a number, a
 * short ASCII string, a small object) is a few dozen bytes, and a client making one call at a time
 * never runs msgpackr's generic decoder often enough for the JIT to optimize it, so decoding it
 * there cost more than all the rest of the reply's handling. Only the plain forms are read here
 * (maps with ASCII string keys, arrays, ASCII strings, 32-bit integers, floats, nil, booleans);
 * anything else — a longer frame, a binary or non-ASCII string, a 64-bit integer, an extension
 * type, a `__proto__` key, malformed bytes — is left to frame-codec.ts's decodeBody (undefined),
 * which decodes it, or refuses it, exactly as before.
 */

/** Larger bodies go to msgpackr. */
const MAX_BYTES = 512;
/** Deeper nesting goes to msgpackr too. */
const MAX_DEPTH = 8;

/** Not decoded here. */
const PUNT = Symbol("punt");

const EMPTY = new Uint8Array(0);
let body: Uint8Array = EMPTY;
let at = 0;

/** The reply in `bytes` (a frame body), or undefined when it is not one of the small plain forms. */
export function decodeSmallReply(bytes: Uint8Array): unknown {
  if (bytes.length > MAX_BYTES) return undefined;
  body = bytes;
  at = 0;
  const value = read(0);
  const whole = at === bytes.length;
  body = EMPTY;
  return value === PUNT || !whole ? undefined : value;
}

function read(depth: number): unknown {
  if (at >= body.length) return PUNT;
  const b = body[at++]!;
  if (b < 0x80) return b;
  if (b >= 0xe0) return b - 0x100;
  if (b < 0x90) return depth < MAX_DEPTH ? readMap(b & 0x0f, depth + 1) : PUNT;
  if (b < 0xa0) return depth < MAX_DEPTH ? readArray(b & 0x0f, depth + 1) : PUNT;
  if (b < 0xc0) return readAscii(b & 0x1f);
  switch (b) {
    case 0xc0:
      return null;
    case 0xc2:
      return false;
    case 0xc3:
      return true;
    case 0xca:
      return fixed(4) ? view().getFloat32(at - 4) : PUNT;
    case 0xcb:
      return fixed(8) ? view().getFloat64(at - 8) : PUNT;
    case 0xcc:
      return fixed(1) ? body[at - 1]! : PUNT;
    case 0xcd:
      return fixed(2) ? (body[at - 2]! << 8) | body[at - 1]! : PUNT;
    case 0xce:
      return fixed(4) ? int32(at - 4) >>> 0 : PUNT;
    case 0xd0:
      return fixed(1) ? (body[at - 1]! << 24) >> 24 : PUNT;
    case 0xd1:
      return fixed(2) ? (((body[at - 2]! << 8) | body[at - 1]!) << 16) >> 16 : PUNT;
    case 0xd2:
      return fixed(4) ? int32(at - 4) : PUNT;
    case 0xd9:
      return fixed(1) ? readAscii(body[at - 1]!) : PUNT;
    default:
      return PUNT;
  }
}

/** Steps over `n` bytes, if the body has them. */
function fixed(n: number): boolean {
  if (at + n > body.length) return false;
  at += n;
  return true;
}

/** The big-endian 32 bits at `p`, as a signed integer. */
function int32(p: number): number {
  return (body[p]! << 24) | (body[p + 1]! << 16) | (body[p + 2]! << 8) | body[p + 3]!;
}

/** For the floats only (integers are read by hand: no view to make). */
function view(): DataView {
  return new DataView(body.buffer, body.byteOffset, body.byteLength);
}

function readAscii(n: number): string | typeof PUNT {
  if (at + n > body.length) return PUNT;
  let text = "";
  for (let i = at; i < at + n; i++) {
    const c = body[i]!;
    if (c >= 0x80) return PUNT;
    text += String.fromCharCode(c);
  }
  at += n;
  return text;
}

function readArray(n: number, depth: number): unknown[] | typeof PUNT {
  const items: unknown[] = [];
  for (let i = 0; i < n; i++) {
    const item = read(depth);
    if (item === PUNT) return PUNT;
    items.push(item);
  }
  return items;
}

/** The keys every reply has, matched by their bytes instead of built again, char by char, for each reply. */
const KNOWN_KEYS: readonly (readonly [string, Uint8Array])[] = ["id", "ok", "result", "error", "code", "message"].map((k) => [k, Buffer.from(k, "latin1")]);

function knownKey(n: number): string | undefined {
  if (at + n > body.length) return undefined;
  for (const [name, bytes] of KNOWN_KEYS) {
    if (bytes.length !== n) continue;
    let i = 0;
    while (i < n && body[at + i] === bytes[i]) i++;
    if (i === n) {
      at += n;
      return name;
    }
  }
  return undefined;
}

function readMap(n: number, depth: number): Record<string, unknown> | typeof PUNT {
  const object: Record<string, unknown> = {};
  for (let i = 0; i < n; i++) {
    const b = body[at];
    // Keys are short strings (fixstr); a `__proto__` key must become an own property, which
    // msgpackr's path in decodeBody sees to.
    if (b === undefined || b < 0xa0 || b > 0xbf) return PUNT;
    at++;
    const key = knownKey(b & 0x1f) ?? readAscii(b & 0x1f);
    if (key === PUNT || key === "__proto__") return PUNT;
    const value = read(depth);
    if (value === PUNT) return PUNT;
    object[key as string] = value;
  }
  return object;
}

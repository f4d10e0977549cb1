/**
 * The wire format (SPEC §6): a 4-byte big-endian length, then that many bytes of one MessagePack
 * value. The only file that knows msgpackr. Input is checked before it is decoded: only plain
 * types (nil, bool, int, float, str, bin, array, map with string keys), bounded nesting, exactly
 * one value per frame — no extension types, so no records, no structured clone, no timestamps.
 */
import { addExtension, Packr, Unpackr } from "msgpackr";
import { SessionDBError } from "../errors.js";
import { BodyPool } from "./body-pool.js";

export const DEFAULT_MAX_FRAME_BYTES = 16 * 1024 * 1024;
/** Deepest nesting of arrays and maps a client may send. */
export const MAX_DEPTH = 64;
/**
 * Most values (each array, map, key and scalar counts one) a client may send in one frame. Decoded,
 * a value costs tens of bytes however small its encoding (an empty map is one byte): a 16 MiB
 * frame of 16.7 million empty maps would take over a GiB and seconds to build. Real requests hold
 * far fewer values than bytes.
 */
export const MAX_ELEMENTS = 1_000_000;
/** The length prefix of every frame, in bytes. */
export const HEADER_BYTES = 4;

// skipValues (absent from msgpackr's typings) drops undefined properties, so an option left out
// stays left out on the other side instead of arriving as an explicit null.
const packr = new Packr({
  useRecords: false,
  structuredClone: false,
  encodeUndefinedAsNil: true,
  skipValues: [undefined],
} as ConstructorParameters<typeof Packr>[0]);
/**
 * A double that goes on the wire as a MessagePack float 64 even when it is a whole number (msgpackr
 * writes `0` and `1700000000` as integers, so a Python client read the REAL 0.0 as the int 0).
 * The daemon wraps the values of REAL columns in its replies (wire-reals.ts).
 */
export class Real {
  constructor(readonly value: number) {}
}

// Written as plain float 64 bytes through the extension's raw-write path (`pack` writes into the
// buffer it is given and returns nothing, so no extension header is written). The type number is
// never on the wire; it only registers the class.
addExtension({
  Class: Real,
  type: 0x7e,
  pack(real: Real, allocate: (size: number) => { target: Uint8Array; targetView: DataView; position: number }) {
    const { target, targetView, position } = allocate(9);
    target[position] = 0xcb;
    targetView.setFloat64(position + 1, real.value);
  },
} as unknown as Parameters<typeof addExtension>[0]);

// copyBuffers: a decoded binary value must not be a view of the frame, whose bytes may belong to
// a read buffer that is reused.
const unpackr = new Unpackr({ useRecords: false, structuredClone: false, mapsAsObjects: true, int64AsType: "number", copyBuffers: true });
// msgpackr renames a `__proto__` map key to `__proto_` when it builds objects, with no option to
// keep it; a body holding that key is decoded into Maps instead, and they become objects whose
// `__proto__` is an own data property (never a prototype), as JSON.parse makes it.
const mapUnpackr = new Unpackr({ useRecords: false, structuredClone: false, mapsAsObjects: false, int64AsType: "number", copyBuffers: true });
// Any occurrence sends the body down the slower path (a text that merely mentions it too), so a
// key encoded as str8 by another client is caught as well: correct either way.
const PROTO_KEY = Buffer.from("__proto__", "latin1");

function mapsToObjects(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(mapsToObjects);
  if (!(value instanceof Map)) return value;
  const object: Record<string, unknown> = {};
  for (const [key, item] of value) {
    Object.defineProperty(object, String(key), { value: mapsToObjects(item), enumerable: true, writable: true, configurable: true });
  }
  return object;
}

/** One frame holding `value`, in a buffer of its own (safe to hand to a socket). */
export function encodeFrame(value: unknown): Buffer {
  const body = packr.pack(value);
  const frame = Buffer.allocUnsafe(HEADER_BYTES + body.length);
  frame.writeUInt32BE(body.length, 0);
  body.copy(frame, HEADER_BYTES);
  return frame;
}

function protocolError(message: string): SessionDBError {
  return new SessionDBError("PROTOCOL", message);
}

/**
 * Walks one MessagePack value in `buf` without building it, and fails unless the buffer holds
 * exactly one value made of plain types. Iterative, so hostile nesting cannot blow the stack.
 */
export function checkPlainMessagePack(buf: Uint8Array): void {
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  let pos = 0;
  // Items still expected at each open level; keysPending marks levels where the next item is a map key.
  const remaining: number[] = [1];
  const isMap: boolean[] = [false];
  const keyNext: boolean[] = [false];
  const need = (n: number) => {
    if (pos + n > buf.length) throw protocolError("truncated MessagePack value");
  };
  const skip = (n: number) => {
    need(n);
    pos += n;
  };
  let elements = 0;
  const open = (count: number, map: boolean) => {
    if (remaining.length > MAX_DEPTH) throw protocolError(`nesting deeper than ${MAX_DEPTH} levels`);
    // Every value takes at least one byte: a count the rest of the frame cannot hold is a lie.
    if ((map ? count * 2 : count) > buf.length - pos) throw protocolError("truncated MessagePack value");
    if (elements + (map ? count * 2 : count) > MAX_ELEMENTS) throw protocolError(`more than ${MAX_ELEMENTS} values in one frame`);
    remaining.push(map ? count * 2 : count);
    isMap.push(map);
    keyNext.push(map);
  };
  while (remaining.length > 0) {
    const level = remaining.length - 1;
    if (remaining[level] === 0) {
      remaining.pop();
      isMap.pop();
      keyNext.pop();
      continue;
    }
    remaining[level]! -= 1;
    if (++elements > MAX_ELEMENTS) throw protocolError(`more than ${MAX_ELEMENTS} values in one frame`);
    const expectKey = isMap[level]! && keyNext[level]!;
    if (isMap[level]) keyNext[level] = !keyNext[level];
    need(1);
    const b = buf[pos++]!;
    const isString = (b >= 0xa0 && b <= 0xbf) || (b >= 0xd9 && b <= 0xdb);
    if (expectKey && !isString) throw protocolError("map keys must be strings");
    if (b <= 0x7f || b >= 0xe0 || b === 0xc0 || b === 0xc2 || b === 0xc3) continue;
    if (b >= 0x80 && b <= 0x8f) open(b & 0x0f, true);
    else if (b >= 0x90 && b <= 0x9f) open(b & 0x0f, false);
    else if (b >= 0xa0 && b <= 0xbf) skip(b & 0x1f);
    else {
      switch (b) {
        case 0xc4: case 0xd9: need(1); skip(view.getUint8(pos++)); break;
        case 0xc5: case 0xda: need(2); pos += 2; skip(view.getUint16(pos - 2)); break;
        case 0xc6: case 0xdb: need(4); pos += 4; skip(view.getUint32(pos - 4)); break;
        case 0xca: skip(4); break;
        case 0xcb: skip(8); break;
        case 0xcc: case 0xd0: skip(1); break;
        case 0xcd: case 0xd1: skip(2); break;
        case 0xce: case 0xd2: skip(4); break;
        case 0xcf: case 0xd3: skip(8); break;
        case 0xdc: need(2); pos += 2; open(view.getUint16(pos - 2), false); break;
        case 0xdd: need(4); pos += 4; open(view.getUint32(pos - 4), false); break;
        case 0xde: need(2); pos += 2; open(view.getUint16(pos - 2), true); break;
        case 0xdf: need(4); pos += 4; open(view.getUint32(pos - 4), true); break;
        default:
          throw protocolError(
            b === 0xc1 ? "invalid MessagePack byte 0xc1" : `MessagePack extension types are not accepted (byte 0x${b.toString(16)})`,
          );
      }
    }
  }
  if (pos !== buf.length) throw protocolError(`${buf.length - pos} bytes after the MessagePack value`);
}

/** Decodes a checked frame body into plain JavaScript values. */
export function decodeBody(body: Uint8Array, trusted = false): unknown {
  if (!trusted) checkPlainMessagePack(body);
  try {
    if (Buffer.from(body.buffer, body.byteOffset, body.byteLength).includes(PROTO_KEY)) return mapsToObjects(mapUnpackr.unpack(body));
    return unpackr.unpack(body);
  } catch (err) {
    throw protocolError(`not a MessagePack value: ${(err as Error).message}`);
  }
}

/**
 * Reassembles frames from a byte stream. `push` returns the frame bodies completed by a chunk;
 * a declared length of 0 or above the limit fails with PROTOCOL or FRAME_TOO_LARGE before any
 * byte of the body is buffered.
 *
 * A chunk may be borrowed: a read buffer the socket fills again after this call (`onread`). The
 * bodies returned may then be views of it, to be used before returning to the event loop; the
 * bytes of a frame not yet complete are copied.
 */
export class FrameDecoder {
  readonly #maxFrameBytes: number;
  /** The length prefix being read, and how many of its bytes have come. */
  readonly #header = Buffer.alloc(HEADER_BYTES);
  #headerFill = 0;
  /** The announced length of the body being received (0: its header has not come). */
  #length = 0;
  /** The body being received, allocated once at its announced length… */
  #body: Buffer | null = null;
  #bodyFill = 0;
  /** …or, with a pool, its first bytes until the owner lets it `allocate()`. */
  #prefix: Buffer[] = [];
  #prefixFill = 0;
  readonly #pool: BodyPool | null;

  /**
   * `pool`: large bodies are taken from it only when the owner calls `allocate()` (a connection
   * waiting for room in the daemon's budget holds just the bytes it has read), and the one being
   * received goes back to it on `reset()`.
   */
  constructor(maxFrameBytes = DEFAULT_MAX_FRAME_BYTES, pool: BodyPool | null = null) {
    this.#maxFrameBytes = maxFrameBytes;
    this.#pool = pool;
  }

  /** Bytes received of a frame not yet complete. */
  get buffered(): number {
    return this.#headerFill + this.#bodyFill + this.#prefixFill;
  }

  /** The length the frame being received announced, or 0 when no frame has its header read. */
  get announced(): number {
    return this.#length;
  }

  push(chunk: Buffer): Buffer[] {
    const bodies: Buffer[] = [];
    let at = 0;
    while (at < chunk.length) {
      if (this.#length === 0) {
        const n = Math.min(HEADER_BYTES - this.#headerFill, chunk.length - at);
        chunk.copy(this.#header, this.#headerFill, at, at + n);
        this.#headerFill += n;
        at += n;
        if (this.#headerFill < HEADER_BYTES) break;
        this.#headerFill = 0;
        const length = this.#header.readUInt32BE(0);
        if (length === 0) throw protocolError("empty frame");
        if (length > this.#maxFrameBytes) {
          throw new SessionDBError("FRAME_TOO_LARGE", `frame of ${length} bytes exceeds the limit of ${this.#maxFrameBytes}`);
        }
        if (chunk.length - at >= length) {
          // Whole in this chunk: a view of it, no copy (a borrowed chunk's views are used before it is reused).
          bodies.push(chunk.subarray(at, at + length));
          at += length;
          continue;
        }
        this.#length = length;
        // Spread over several reads: one buffer of the announced length, filled as the bytes come,
        // instead of a list of reads joined (copied) at the end.
        if (this.#pool === null || length < BodyPool.MIN_BYTES) this.allocate();
      }
      const n = Math.min(this.#length - this.#bodyFill - this.#prefixFill, chunk.length - at);
      if (this.#body !== null) {
        chunk.copy(this.#body, this.#bodyFill, at, at + n);
        this.#bodyFill += n;
      } else {
        this.#prefix.push(Buffer.from(chunk.subarray(at, at + n)));
        this.#prefixFill += n;
      }
      at += n;
      if (this.#bodyFill + this.#prefixFill === this.#length) {
        bodies.push(this.#body ?? Buffer.concat(this.#prefix));
        this.#clear();
      }
    }
    return bodies;
  }

  /** Allocates the body being received at its full length (a no-op when it is). */
  allocate(): void {
    if (this.#length === 0 || this.#body !== null) return;
    this.#body = this.#pool?.take(this.#length) ?? Buffer.allocUnsafe(this.#length);
    for (const part of this.#prefix) {
      part.copy(this.#body, this.#bodyFill);
      this.#bodyFill += part.length;
    }
    this.#prefix = [];
    this.#prefixFill = 0;
  }

  /** Drops a frame being received (its connection is closing). */
  reset(): void {
    if (this.#body !== null) this.#pool?.give(this.#body);
    this.#clear();
    this.#headerFill = 0;
  }

  #clear(): void {
    this.#length = 0;
    this.#body = null;
    this.#bodyFill = 0;
    this.#prefix = [];
    this.#prefixFill = 0;
  }
}

/**
 * The wire format (SPEC §6): a 4-byte big-endian length, then that many bytes of one MessagePack
 * value. The only file that knows msgpackr: a value encoded into a frame, a frame body decoded.
 * Input is checked before it is decoded (plain-msgpack-validator.ts); frames are reassembled from
 * a byte stream by frame-decoder.ts.
 */
import { addExtension, Packr, RESERVE_START_SPACE, Unpackr } from "msgpackr";
import { SessionDBError } from "../errors.js";
import { HEADER_BYTES } from "./frame-limits.js";
import { checkPlainMessagePack } from "./plain-msgpack-validator.js";

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

/** One value's MessagePack bytes (no frame header): a watch chunk encoded once for every subscriber (`chunkFrame`). */
export function encodeValue(value: unknown): Uint8Array {
  return packr.pack(value);
}

const CHUNK_KEY = Buffer.from([0xa5, 0x63, 0x68, 0x75, 0x6e, 0x6b]); // fixstr "chunk"
const OK_RESULT_KEYS = Buffer.from([0xa2, 0x6f, 0x6b, 0xc3, 0xa6, 0x72, 0x65, 0x73, 0x75, 0x6c, 0x74]); // "ok" true "result"

/**
 * A read's result already encoded by the reader thread that read it (wire-reals.ts
 * `encodeResult`): the reply frame is put around its bytes as they are (`resultFrame`), neither
 * copied between threads as objects nor encoded again on the daemon's main thread.
 */
export class EncodedResult {
  /** `bytes`: the MessagePack bytes, one per character (latin1). */
  constructor(readonly bytes: string) {}
}

/**
 * The frame `{id, chunk}` (what `encodeFrame` makes of it, byte for byte) around a chunk already
 * encoded by `encodeValue`: one commit's events are encoded once, whatever the subscribers.
 */
export function chunkFrame(id: number, chunk: Uint8Array): Buffer {
  return idFrame(2, id, CHUNK_KEY, chunk);
}

/** The reply `{id, ok: true, result}` (what `encodeFrame` makes of it, byte for byte) around a result encoded by the reader thread. */
export function resultFrame(id: number, result: EncodedResult): Buffer {
  return idFrame(3, id, OK_RESULT_KEYS, result.bytes);
}

/** A frame of a map of `entries` entries: `id` first, then the bytes of the others (`keys`, then the last value). */
function idFrame(entries: 2 | 3, id: number, keys: Buffer, value: Uint8Array | string): Buffer {
  const idBytes = id < 0x80 ? 1 : id < 0x100 ? 2 : id < 0x10000 ? 3 : 5;
  const bodyLength = 1 + 3 + idBytes + keys.length + value.length;
  const frame = Buffer.allocUnsafe(HEADER_BYTES + bodyLength);
  frame.writeUInt32BE(bodyLength, 0);
  let at = HEADER_BYTES;
  frame[at++] = 0x80 | entries; // fixmap
  frame[at++] = 0xa2; // fixstr "id"
  frame[at++] = 0x69;
  frame[at++] = 0x64;
  if (idBytes === 1) frame[at++] = id;
  else if (idBytes === 2) (frame[at++] = 0xcc, frame[at++] = id);
  else if (idBytes === 3) (frame[at++] = 0xcd, frame.writeUInt16BE(id, at), at += 2);
  else (frame[at++] = 0xce, frame.writeUInt32BE(id, at), at += 4);
  keys.copy(frame, at);
  at += keys.length;
  if (typeof value === "string") frame.write(value, at, "latin1");
  else frame.set(value, at);
  return frame;
}

/**
 * One frame holding `value`, safe to hand to a socket: the body is encoded after room left for
 * the length, which is then written in place (no second buffer, no copy). msgpackr hands out
 * successive views of its buffer and never writes over one it returned (a full buffer is
 * replaced, not reused), as `encodeValue`'s chunks rely on too.
 */
export function encodeFrame(value: unknown): Buffer {
  const frame = packr.pack(value, RESERVE_START_SPACE | HEADER_BYTES);
  frame.writeUInt32BE(frame.length - HEADER_BYTES, 0);
  return frame;
}

/** Decodes a checked frame body into plain JavaScript values. */
export function decodeBody(body: Uint8Array, trusted = false): unknown {
  if (!trusted) checkPlainMessagePack(body);
  try {
    if (Buffer.from(body.buffer, body.byteOffset, body.byteLength).includes(PROTO_KEY)) return mapsToObjects(mapUnpackr.unpack(body));
    return unpackr.unpack(body);
  } catch (err) {
    throw new SessionDBError("PROTOCOL", `not a MessagePack value: ${(err as Error).message}`);
  }
}

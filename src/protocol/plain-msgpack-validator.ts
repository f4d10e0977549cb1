/**
 * The check every frame body from a client passes before it is decoded: only plain MessagePack
 * types (nil, bool, int, float, str, bin, array, map with string keys), bounded nesting, a bounded
 * count of values, exactly one value per frame; no extension types, so no records, no structured
 * clone, no timestamps.
 */
import { SessionDBError } from "../errors.js";
import { MAX_DEPTH, MAX_ELEMENTS } from "./frame-limits.js";

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

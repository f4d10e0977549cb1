/**
 * The frame limits of the wire format (SPEC §6): the length prefix, the largest frame, and how
 * deep and how many values one frame may hold. Plain numbers, shared by the codec, the validator,
 * the stream decoder and the daemon's options.
 */
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

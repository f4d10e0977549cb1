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
/**
 * The largest reply frame a client takes. Replies come from the user's own daemon, so large
 * results (an exported session) are allowed; past this a reply is a PROTOCOL error.
 */
export const MAX_REPLY_FRAME_BYTES = 1024 * 1024 * 1024;
/** The daemon's defaults for one connection (options of `serve`): past any, it stops reading that connection until it catches up. */
export const DEFAULT_MAX_IN_FLIGHT_PER_CONNECTION = 256;
export const DEFAULT_MAX_REQUEST_BYTES_PER_CONNECTION = 16 * 1024 * 1024;
export const DEFAULT_MAX_REPLY_BUFFER_BYTES = 8 * 1024 * 1024;

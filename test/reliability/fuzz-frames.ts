/**
 * Hostile frames for the protocol fuzz test: random and mutated, each with what the daemon must
 * do about it. `reply`: answer it (an error, or a result if the mutation happened to be valid)
 * and keep the connection; `close`: send an error frame and close the connection; `wait`: the
 * frame is not complete, so wait for more (and close when the client gives up); `any`: one of
 * those, but never crash, hang, or answer nonsense.
 */
import type { Random as Rng } from "../../bench/random.js";
import { encodeFrame } from "../../src/protocol/frame-codec.js";

export type Expect = "reply" | "close" | "wait" | "any";

export interface FuzzFrame {
  kind: string;
  bytes: Buffer;
  expect: Expect;
}

/** The fuzzer's seeded random source (the benchmarks' mulberry32), so a failing run can be replayed. */
export { Random as Rng } from "../../bench/random.js";

function randomBytes(rng: Rng, n: number): Buffer {
  const b = Buffer.alloc(n);
  for (let i = 0; i < n; i++) b[i] = rng.int(0, 255);
  return b;
}

const ALPHABET = [..."abcdefghijklmnopqrstuvwxyz_-. #%*\"'\\\u00e9\u4e2d\u{1f600}\u0000\u202e"];

/** Up to `max` characters, with quotes, wildcards, CJK, an emoji, NUL and a direction override among them. */
function randomString(rng: Rng, max: number): string {
  let s = "";
  for (let i = rng.int(0, max); i > 0; i--) s += rng.pick(ALPHABET);
  return s;
}

/** A frame around `body` whose header declares `declared` bytes (a lie, when the test wants one). */
export function frame(body: Uint8Array, declared = body.length): Buffer {
  const header = Buffer.alloc(4);
  header.writeUInt32BE(declared >>> 0, 0);
  return Buffer.concat([header, body]);
}

/** Plain MessagePack of a value, as the codec writes it; the hostile parts are added by hand. */
function pack(value: unknown): Buffer {
  return encodeFrame(value).subarray(4);
}

/**
 * Operations a fuzzed request may name: reads, and writes that only touch the fuzzer's own
 * sessions. Not `exportAll`: its answer is the whole file, which the good client keeps growing, so
 * it would measure the file rather than the fuzz.
 */
const SAFE_OPS = [
  "getSession", "resolveSessionId", "getSessionTitle", "getSessionByTitle", "resolveSessionByTitle", "getNextTitleInLineage",
  "getCompressionTip", "listSessionsRich", "getMessages", "getMessagesAsConversation", "searchMessages", "searchSessions",
  "sessionCount", "messageCount", "exportSession", "hello", "ping", "stats", "createSession", "appendMessage",
  "setSessionTitle", "updateTokenCounts", "ensureSession",
] as const;

/** A random plain value: what a confused client might send as an argument. */
function junk(rng: Rng, depth = 0): unknown {
  switch (rng.int(0, depth > 3 ? 5 : 9)) {
    case 0: return null;
    case 1: return rng.next() < 0.5;
    case 2: return rng.int(-(2 ** 31), 2 ** 31);
    case 3: return rng.pick([0, -1, 1.5, Number.MAX_SAFE_INTEGER, -0, 1e308, 2 ** 53 + 2]);
    case 4: return randomString(rng, 40);
    case 5: return randomBytes(rng, rng.int(0, 40));
    case 6:
    case 7: return Array.from({ length: rng.int(0, 5) }, () => junk(rng, depth + 1));
    default: {
      const obj: Record<string, unknown> = {};
      for (let i = rng.int(0, 5); i > 0; i--) {
        obj[rng.pick(["role", "content", "limit", "source", "toolCalls", "model", "offset", randomString(rng, 8)])] = junk(rng, depth + 1);
      }
      return obj;
    }
  }
}

/** A well-formed request to one of the safe operations with plausible arguments. */
function validRequest(rng: Rng, id: number): Record<string, unknown> {
  const op = rng.pick(SAFE_OPS);
  const session = `fuzz-${rng.int(0, 20)}`;
  const args: Record<string, unknown[]> = {
    createSession: [session, "fuzz", { model: "m" }],
    ensureSession: [session],
    appendMessage: [session, { role: "user", content: randomString(rng, 60) }],
    setSessionTitle: [session, randomString(rng, 20)],
    updateTokenCounts: [session, { inputTokens: rng.int(0, 100) }],
    searchMessages: [randomString(rng, 10), { limit: rng.int(0, 50) }],
    listSessionsRich: [{ limit: rng.int(0, 50) }],
    hello: [{ protocol: 1 }],
  };
  return { id, op, args: args[op] ?? [session] };
}

function requestFrame(value: unknown): Buffer {
  return frame(pack(value));
}

/** A `getSession` request whose args are the given raw MessagePack bytes. */
function withArgs(id: number, args: number[]): Buffer {
  const request = pack({ id, op: "getSession", args: [] });
  // args comes last: the final byte is its empty array (0x90).
  return frame(Buffer.concat([request.subarray(0, request.length - 1), Buffer.from(args)]));
}

type Generator = (rng: Rng, id: number) => FuzzFrame;

/** Frames the daemon must answer with an error (or a result) and survive on the same connection. */
const replyGenerators: Record<string, Generator> = {
  unknownOp: (rng, id) => ({ kind: "unknownOp", expect: "reply", bytes: requestFrame({ id, op: rng.pick(["", "constructor", "__proto__", "toString", "hasOwnProperty", randomString(rng, 30)]), args: [] }) }),
  wrongShape: (rng, id) => ({
    kind: "wrongShape",
    expect: "reply",
    bytes: requestFrame(
      rng.pick<unknown>([
        { id: String(id), op: "ping" }, { id: -id, op: "ping" }, { id: id + 0.5, op: "ping" }, { id: 2 ** 40, op: "ping" },
        { op: "ping" }, { id, op: 7 }, { id, op: ["ping"] }, { id, op: "ping", args: "x" }, { id, op: "ping", args: { 0: 1 } },
        { id, op: "ping", timeoutMs: -1 }, { id, op: "ping", timeoutMs: "soon" }, { id, op: "getSession", timeoutMs: 0 },
        [id, "ping", []], "ping", id, null, true, randomBytes(rng, 8), 3.25,
      ]),
    ),
  }),
  wrongArgs: (rng, id) => {
    const op = rng.pick(SAFE_OPS);
    const args = rng.next() < 0.8 ? Array.from({ length: rng.int(0, 6) }, () => junk(rng)) : junk(rng);
    return { kind: "wrongArgs", expect: "reply", bytes: requestFrame({ id, op, args }) };
  },
  pollution: (rng, id) => {
    const texts = [
      `{"id":${id},"op":"getSession","args":[{"__proto__":{"polluted":true,"timeoutMs":-1}}]}`,
      `{"id":${id},"op":"appendMessage","args":["fuzz-1",{"__proto__":{"role":"user","content":"polluted"}}]}`,
      `{"id":${id},"op":"listSessionsRich","args":[{"constructor":{"prototype":{"limit":5,"polluted":1}}}]}`,
      `{"__proto__":{"id":${id},"op":"ping","args":[]},"id":${id},"op":"getSession","args":["x"]}`,
      `{"id":${id},"op":"searchMessages","args":["x",{"__proto__":{"limit":1e9},"sourceFilter":{"__proto__":[]}}]}`,
      `{"id":${id},"op":"createSession","args":["fuzz-p","fuzz",{"modelConfig":{"__proto__":{"x":1},"constructor":{"prototype":{"y":2}}}}]}`,
    ];
    return { kind: "pollution", expect: "reply", bytes: requestFrame(JSON.parse(rng.pick(texts))) };
  },
  valid: (rng, id) => ({ kind: "valid", expect: "reply", bytes: requestFrame(validRequest(rng, id)) }),
};

/** Frames after which the daemon must send an error frame and close the connection. */
const closeGenerators: Record<string, Generator> = {
  deepNesting: (rng, id) => {
    // Arrays of one element, or maps of one key "k", nested 65 to 20,000 deep, around a nil.
    const level = rng.next() < 0.5 ? [0x91] : [0x81, 0xa1, 0x6b];
    const nested = [...new Array<number[]>(rng.int(65, 20_000)).fill(level).flat(), 0xc0];
    return { kind: "deepNesting", expect: "close", bytes: withArgs(id, nested) };
  },
  extension: (rng, id) => {
    const ext = rng.pick([
      [0xd4, 0x01, 0x00], [0xd5, 0xff, 0, 0], [0xd6, 0xff, 0, 0, 0, 0], [0xd7, 0x72, 1, 2, 3, 4, 5, 6, 7, 8],
      [0xd8, 0x01, ...new Array(16).fill(0)], [0xc7, 3, 0x78, 1, 2, 3], [0xc8, 0, 2, 0x65, 1, 2], [0xc9, 0, 0, 0, 1, 0x74, 9],
    ]);
    return { kind: "extension", expect: "close", bytes: withArgs(id, [0x91, ...ext]) };
  },
  nonStringKey: (rng, id) => ({
    kind: "nonStringKey",
    expect: "close",
    bytes: frame(Buffer.concat([Buffer.from([0x84, 0x01, 0x02]), pack("id"), pack(id), pack("op"), pack("ping"), pack("args"), Buffer.from([0x90])])),
  }),
  trailingBytes: (rng, id) => ({ kind: "trailingBytes", expect: "close", bytes: frame(Buffer.concat([pack({ id, op: "ping", args: [] }), Buffer.from([0xc0])])) }),
  invalidByte: (_rng, id) => ({ kind: "invalidByte", expect: "close", bytes: withArgs(id, [0x91, 0xc1]) }),
  zeroLength: () => ({ kind: "zeroLength", expect: "close", bytes: Buffer.from([0, 0, 0, 0]) }),
  hugeLength: (rng) => {
    const declared = rng.pick([16 * 1024 * 1024 + 1, 0x7fffffff, 0xffffffff, rng.int(16 * 1024 * 1024 + 1, 0xffffffff)]);
    return { kind: "hugeLength", expect: "close", bytes: frame(randomBytes(rng, rng.int(0, 64)), declared) };
  },
  hugeCollection: (rng) => {
    const heads = [[0xdd, 0xff, 0xff, 0xff, 0xff], [0xdf, 0xff, 0xff, 0xff, 0xff], [0xdb, 0xff, 0xff, 0xff, 0xff], [0xc6, 0x7f, 0xff, 0xff, 0xff], [0xdc, 0xff, 0xff], [0xde, 0xff, 0xff]];
    return { kind: "hugeCollection", expect: "close", bytes: frame(Buffer.concat([Buffer.from(rng.pick(heads)), randomBytes(rng, rng.int(0, 16))])) };
  },
  emptyBody: () => ({ kind: "emptyBody", expect: "close", bytes: frame(Buffer.from([0x92])) }),
};

/** Frames with unpredictable fates. */
const anyGenerators: Record<string, Generator> = {
  randomBody: (rng) => ({ kind: "randomBody", expect: "any", bytes: frame(randomBytes(rng, rng.int(1, 300))) }),
  mutated: (rng, id) => {
    const body = pack(validRequest(rng, id));
    const bytes = [...body];
    for (let m = rng.int(1, 4); m > 0; m--) {
      const at = rng.int(0, bytes.length - 1);
      const what = rng.int(0, 2);
      if (what === 0) bytes[at] = rng.int(0, 255);
      else if (what === 1) bytes.splice(at, 0, rng.int(0, 255));
      else if (bytes.length > 1) bytes.splice(at, 1);
    }
    return { kind: "mutated", expect: "any", bytes: frame(Buffer.from(bytes)) };
  },
  shortLength: (rng, id) => {
    const body = pack(validRequest(rng, id));
    return { kind: "shortLength", expect: "any", bytes: frame(body, rng.int(1, body.length - 1)) };
  },
  randomBytes: (rng) => ({ kind: "randomBytes", expect: "any", bytes: randomBytes(rng, rng.int(1, 64)) }),
};

const waitGenerators: Record<string, Generator> = {
  truncated: (rng, id) => {
    const body = pack(validRequest(rng, id));
    const declared = body.length + rng.int(1, 1024 * 1024);
    return { kind: "truncated", expect: "wait", bytes: frame(body, declared) };
  },
};

export function replyFrame(rng: Rng, id: number): FuzzFrame {
  return rng.pick(Object.values(replyGenerators))(rng, id);
}

export function closeFrame(rng: Rng, id: number): FuzzFrame {
  return rng.pick(Object.values(closeGenerators))(rng, id);
}

export function anyFrame(rng: Rng, id: number): FuzzFrame {
  return rng.pick(Object.values(anyGenerators))(rng, id);
}

export function waitFrame(rng: Rng, id: number): FuzzFrame {
  return rng.pick(Object.values(waitGenerators))(rng, id);
}

/** The last frame of a connection that is still readable: the daemon must answer it. */
export function sentinel(id: number): Buffer {
  return requestFrame({ id, op: "ping", args: [] });
}

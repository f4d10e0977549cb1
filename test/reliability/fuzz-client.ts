/**
 * The fuzzer's client side: connections that each send a plan of hostile frames and hold the
 * daemon to what the plan expects (see fuzz-frames.ts), many at once.
 */
import { connect } from "node:net";
import { ERROR_CODES } from "../../src/index.js";
import { decodeBody } from "../../src/protocol/frame-codec.js";
import { FrameDecoder } from "../../src/protocol/frame-decoder.js";
import { anyFrame, closeFrame, replyFrame, Rng, sentinel, waitFrame, type Expect, type FuzzFrame } from "./fuzz-frames.js";

const SENTINEL_ID = 0xfffffff0;
/** How long a connection may stay silent before the fuzzer gives up on it (then it must be closed). */
const SILENCE_MS = 1500;
/** Bound on any one connection; exceeding it is a hang (generous: many connections share a loaded machine). */
const STEP_LIMIT_MS = 120_000;

type Reply = Record<string, unknown> & { id: number };

export interface Plan {
  expect: Expect;
  frames: FuzzFrame[];
}

export function makePlan(rng: Rng, nextId: () => number): Plan {
  const roll = rng.next();
  if (roll < 0.3) return { expect: "reply", frames: Array.from({ length: rng.int(1, 20) }, () => replyFrame(rng, nextId())) };
  if (roll < 0.65) {
    const before = Array.from({ length: rng.int(0, 3) }, () => replyFrame(rng, nextId()));
    return { expect: "close", frames: [...before, closeFrame(rng, nextId())] };
  }
  if (roll < 0.75) return { expect: "wait", frames: [waitFrame(rng, nextId())] };
  return { expect: "any", frames: [anyFrame(rng, nextId())] };
}

const KNOWN_CODES: ReadonlySet<string> = new Set(ERROR_CODES);

/** One connection: sends the plan's frames and holds the daemon to what it expects. Returns a problem or null. */
function probe(socketPath: string, plan: Plan): Promise<string | null> {
  return new Promise((resolve) => {
    const socket = connect(socketPath);
    const decoder = new FrameDecoder(64 * 1024 * 1024);
    const replies: Reply[] = [];
    let weEnded = false;
    let settled = false;
    let silence: NodeJS.Timeout | undefined;
    const kinds = plan.frames.map((f) => f.kind).join(",");
    const finish = (problem: string | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(silence);
      clearTimeout(limit);
      socket.destroy();
      resolve(problem === null ? null : `${plan.expect} [${kinds}]: ${problem}`);
    };
    const limit = setTimeout(() => finish(`no answer and no close within ${STEP_LIMIT_MS} ms`), STEP_LIMIT_MS);
    const giveUp = () => {
      weEnded = true;
      socket.end();
    };
    const errorFrame = () => replies.find((r) => r.id === 0 && r.ok === false);
    const sentinelAnswered = () => replies.some((r) => r.id === SENTINEL_ID);

    socket.on("error", () => {
      // "close" follows
    });
    socket.on("data", (chunk: Buffer) => {
      try {
        for (const body of decoder.push(chunk)) {
          const reply = decodeBody(body, true) as Reply;
          if (!Array.isArray(reply.chunk)) replies.push(reply);
        }
      } catch (err) {
        finish(`the daemon sent a frame we cannot read: ${(err as Error).message}`);
        return;
      }
      for (const r of replies) {
        if (typeof r.ok !== "boolean") return finish(`a reply without ok: ${JSON.stringify(r)}`);
        const code = (r.error as { code?: unknown } | undefined)?.code;
        if (r.ok === false && (typeof code !== "string" || !KNOWN_CODES.has(code))) return finish(`unknown error code ${String(code)}`);
      }
      if (plan.expect === "reply" && replies.length >= plan.frames.length + 1 && sentinelAnswered()) {
        finish(replies.length === plan.frames.length + 1 ? null : `${replies.length} replies to ${plan.frames.length + 1} requests`);
      } else if (plan.expect === "any" && sentinelAnswered()) {
        finish(null);
      } else if (plan.expect === "wait" && replies.length > 0) {
        finish(`an incomplete frame was answered: ${JSON.stringify(replies[0])}`);
      }
    });
    socket.on("close", () => {
      if (settled) return;
      if (weEnded) return finish(plan.expect === "reply" ? "closed before all replies came" : null);
      // The daemon closed the connection itself: only after an error frame, and never for good input.
      if (plan.expect === "reply" || plan.expect === "wait") return finish(`closed by the daemon (replies: ${JSON.stringify(replies.slice(-2))})`);
      const error = errorFrame();
      if (error === undefined) return finish("closed without an error frame");
      const code = (error.error as { code: string }).code;
      if (code !== "PROTOCOL" && code !== "FRAME_TOO_LARGE") return finish(`closed with ${code}`);
      if (sentinelAnswered()) return finish("a request after the bad frame was answered");
      finish(null);
    });
    socket.on("connect", () => {
      socket.write(Buffer.concat(plan.frames.map((f) => f.bytes)));
      if (plan.expect === "wait") {
        silence = setTimeout(giveUp, 50);
        return;
      }
      socket.write(sentinel(SENTINEL_ID));
      if (plan.expect === "any") silence = setTimeout(giveUp, SILENCE_MS);
    });
  });
}

export interface FuzzRun {
  sent: number;
  connections: number;
  problems: string[];
  outcomes: Record<string, number>;
}

/** Runs plans on `concurrency` connections at once until `frames` frames were sent. */
export async function fuzz(socketPath: string, rng: Rng, frames: number, concurrency: number, plan = makePlan): Promise<FuzzRun> {
  let sent = 0;
  let connections = 0;
  let id = 1;
  const problems: string[] = [];
  const outcomes: Record<string, number> = {};
  const nextId = () => (id = id >= 0xffff_ff00 ? 1 : id + 1);
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (sent < frames) {
        const next = plan(rng, nextId);
        sent += next.frames.length;
        connections++;
        outcomes[next.expect] = (outcomes[next.expect] ?? 0) + 1;
        const problem = await probe(socketPath, next);
        if (problem !== null) problems.push(problem);
      }
    }),
  );
  return { sent, connections, problems, outcomes };
}

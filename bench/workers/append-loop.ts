/**
 * The timed closed loop every appending child runs: each lane appends, waits for the answer,
 * records the latency and appends again, until the deadline or `stop`. One lane is one client
 * doing one thing at a time; several lanes keep that many appends in flight.
 */
import { readFileSync } from "node:fs";
import { setImmediate as yieldToEventLoop } from "node:timers/promises";
import type { NewMessage } from "../../src/index.js";
import { schedDelta, schedTimes } from "../cpu-usage.js";
import type { GeneratedMessage } from "../text-generator.js";
import type { ChildControl } from "./child-control.js";
import type { WriterReport } from "./protocol.js";

export type LoopOutcome = Omit<WriterReport, "retries">;

/** A lane that runs synchronous work (better-sqlite3) lets stdin be read this often. */
const YIELD_EVERY_MS = 20;

export function loadMessages(file: string): GeneratedMessage[] {
  return JSON.parse(readFileSync(file, "utf8")) as GeneratedMessage[];
}

/** A pooled message as sessiondb's `appendMessage` takes it. */
export function asNewMessage(m: GeneratedMessage): NewMessage {
  const msg: NewMessage = { role: m.role, content: m.content };
  if (m.toolCalls !== undefined) msg.toolCalls = m.toolCalls;
  if (m.toolName !== undefined) msg.toolName = m.toolName;
  if (m.toolCallId !== undefined) msg.toolCallId = m.toolCallId;
  return msg;
}

/** The error's stable code when it has one (SessionDBError, SqliteError), else its message. */
export function errorKey(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : String((err as Error)?.message ?? err).slice(0, 80);
}

export interface LoopShape {
  seconds: number;
  /** Calls kept in flight. */
  lanes: number;
  /** Calls made one at a time before `ready`, not measured. */
  warmup: number;
  /** Appends one call makes (a batch, for the ceiling); each is counted with the call's latency. */
  perCall: number;
}

/**
 * Warms up, then starts at `go`; `append(n)` makes the n-th call (0, 1, 2, … across all lanes)
 * and resolves once it is acknowledged. A failed call is counted and the loop goes on, as an
 * agent would.
 */
export async function appendLoop(
  control: ChildControl<unknown>,
  shape: LoopShape,
  append: (n: number) => unknown,
): Promise<LoopOutcome> {
  const { seconds, lanes, warmup, perCall } = shape;
  let next = 0;
  let warmupAppends = 0;
  for (; next < warmup; next++) {
    try {
      await append(next);
      warmupAppends += perCall;
    } catch {
      // A failed warm-up append was rolled back: nothing to count.
    }
  }
  await control.ready();
  const cpuBefore = process.cpuUsage();
  const schedBefore = schedTimes("self");
  const startMs = Date.now();
  const deadline = performance.now() + seconds * 1000;
  const latenciesMs: number[] = [];
  const errors: Record<string, number> = {};
  let failures = 0;
  let lastYield = performance.now();
  const lane = async () => {
    while (!control.stopped && performance.now() < deadline) {
      const n = next++;
      const t0 = performance.now();
      try {
        await append(n);
        const latency = performance.now() - t0;
        for (let i = 0; i < perCall; i++) latenciesMs.push(latency);
      } catch (err) {
        failures += perCall;
        const key = errorKey(err);
        errors[key] = (errors[key] ?? 0) + perCall;
      }
      if (performance.now() - lastYield > YIELD_EVERY_MS) {
        await yieldToEventLoop();
        lastYield = performance.now();
      }
    }
  };
  await Promise.all(Array.from({ length: lanes }, lane));
  const endMs = Date.now();
  const cpu = process.cpuUsage(cpuBefore);
  const sched = schedDelta(schedBefore, schedTimes("self"));
  return {
    warmupAppends,
    appends: latenciesMs.length,
    failures,
    errors,
    startMs,
    endMs,
    latenciesMs: latenciesMs.map(round3),
    cpuMs: (cpu.user + cpu.system) / 1000,
    sched,
  };
}

function round3(ms: number): number {
  return Math.round(ms * 1000) / 1000;
}

import type { Command } from "commander";
import type { SessionRow, WatchEvent } from "../../session-db.js";
import { localTime, oneLine, truncate } from "../format.js";
import { withStore } from "../open-store.js";
import type { Output } from "../output.js";

/** Characters of a message's content on its line. */
const CONTENT_SHOWN = 120;

export function registerWatch(program: Command): void {
  program
    .command("watch")
    .description("every session's events as they are written, by any process: one line each (--json: JSON lines), until Ctrl-C")
    .option("--source <S>", "only the sessions of this source")
    .action(async (opts: { source?: string }, command: Command) => {
      await withStore(command, { mustExist: true }, async ({ db }, out) => {
        await untilInterrupted(async (signal) => {
          for await (const event of db.watch({ source: opts.source ?? null, signal })) {
            out.line(out.json ? JSON.stringify(event) : eventLine(out, event));
          }
        });
      });
    });
}

/**
 * Runs `body` with a signal that SIGINT and SIGTERM abort: a follow ends quietly (exit 0) on
 * Ctrl-C. (A reader that goes away, SIGPIPE, ends it through stdout's EPIPE: cli/main.ts.)
 */
export async function untilInterrupted(body: (signal: AbortSignal) => Promise<void>): Promise<void> {
  const stop = new AbortController();
  const abort = () => stop.abort();
  process.once("SIGINT", abort);
  process.once("SIGTERM", abort);
  try {
    await body(stop.signal);
  } finally {
    process.off("SIGINT", abort);
    process.off("SIGTERM", abort);
  }
}

/** `HH:MM:SS  <session>  <what>`: a message's role and first words, or the session's change. */
export function eventLine(out: Output, event: WatchEvent): string {
  const { c } = out;
  if (event.type === "resync") return c.yellow(`resync: events were dropped; re-read, the feed goes on after message ${event.afterMessageId}`);
  const time = (seconds: number) => c.dim(localTime(seconds, true).slice(11));
  if (event.type === "message") {
    const m = event.message;
    const calls = Array.isArray(m.tool_calls) ? m.tool_calls.length : m.tool_calls === null || m.tool_calls === undefined ? 0 : 1;
    const what = [c.bold(oneLine(m.role)) + ":", truncate(oneLine(m.content ?? ""), CONTENT_SHOWN)];
    if (m.tool_name !== null) what.splice(1, 0, c.dim(`[${oneLine(m.tool_name)}]`));
    if (calls > 0) what.push(c.dim(`(${calls} tool call${calls === 1 ? "" : "s"})`));
    return `${time(m.timestamp)}  ${oneLine(m.session_id)}  ${what.filter((w) => w !== "").join(" ")}`;
  }
  return `${time(Date.now() / 1000)}  ${oneLine(event.sessionId)}  ${c.magenta(event.change)}${details(event.change, event.session)}`;
}

function details(change: string, s: SessionRow | null): string {
  if (s === null) return "";
  switch (change) {
    case "created":
      return ` ${oneLine(s.source)}${s.model === null ? "" : ` ${oneLine(s.model)}`}`;
    case "ended":
      return s.end_reason === null ? "" : ` (${oneLine(s.end_reason)})`;
    case "titled":
      return s.title === null ? " (cleared)" : ` ${JSON.stringify(oneLine(s.title))}`;
    case "tokens":
      return ` ${s.input_tokens ?? 0} in / ${s.output_tokens ?? 0} out`;
    default:
      return "";
  }
}

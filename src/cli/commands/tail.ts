import type { Command } from "commander";
import type { MessageRow, SessionRow, WatchEvent } from "../../session-db.js";
import { nonNegativeInt } from "../arguments.js";
import { localTime, oneLine } from "../format.js";
import { withStore } from "../open-store.js";
import type { Output } from "../output.js";
import { resolveSession } from "../resolve-session.js";
import { printMessage } from "./show.js";
import { untilInterrupted } from "./watch.js";

const DEFAULT_COUNT = 10;

export function registerTail(program: Command): void {
  program
    .command("tail")
    .description("the last messages of a session, formatted like show; with -f, then new ones as they come (until Ctrl-C)")
    .argument("<session>", "an id, a unique id prefix, or a title")
    .option("-n, --lines <N>", `how many of the last messages (default ${DEFAULT_COUNT}; 0: none)`, nonNegativeInt)
    .option("-f, --follow", "keep going: print each new message as it is written, by any process")
    .option("--full", "do not cut long tool results and reasoning")
    .action(async (ref: string, opts: { lines?: number; follow?: boolean; full?: boolean }, command: Command) => {
      await withStore(command, { mustExist: true }, async ({ db }, out) => {
        const sessionId = await resolveSession(db, ref);
        const messages = await db.getMessages(sessionId);
        const count = opts.lines ?? DEFAULT_COUNT;
        for (const m of count === 0 ? [] : messages.slice(-count)) printTailMessage(out, m, opts.full === true);
        if (opts.follow !== true) return;
        // From the newest message read: what was appended since is replayed, nothing twice.
        const afterMessageId = messages.reduce((max, m) => Math.max(max, m.id), 0);
        await untilInterrupted(async (signal) => {
          for await (const event of db.watch({ sessionId, afterMessageId, signal })) {
            if (!followed(out, event, opts.full === true)) return;
          }
        });
      });
    });
}

/** A message as `show` prints it; under `--json`, its row on one line. */
function printTailMessage(out: Output, m: MessageRow, full: boolean): void {
  if (out.json) out.line(JSON.stringify(m));
  else printMessage(out, m, full);
}

/** Prints what `tail -f` shows of an event; false once the session is gone (the end). */
function followed(out: Output, event: WatchEvent, full: boolean): boolean {
  if (event.type === "message") {
    printTailMessage(out, event.message, full);
    return true;
  }
  if (event.type === "resync") return true; // the messages after its cursor follow
  const note = sessionNote(event.change, event.session);
  if (note !== null && !out.json) {
    out.line();
    out.line(out.c.dim(`— ${note}`));
  }
  return event.change !== "deleted";
}

function sessionNote(change: string, s: SessionRow | null): string | null {
  switch (change) {
    case "ended":
      return `session ended${s?.end_reason ? ` (${oneLine(s.end_reason)})` : ""}${s?.ended_at ? ` at ${localTime(s.ended_at, true)}` : ""}`;
    case "reopened":
      return "session reopened";
    case "titled":
      return s?.title ? `titled ${JSON.stringify(oneLine(s.title))}` : "title cleared";
    case "cleared":
      return "messages removed (sessiondb show reads what is left)";
    case "deleted":
      return "session deleted";
    default:
      return null; // tokens, the system prompt: not part of the conversation
  }
}

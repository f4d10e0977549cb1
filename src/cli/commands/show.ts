import type { Command } from "commander";
import { CliError } from "../cli-error.js";
import type { MessageRow, SessionExport } from "../../session-db.js";
import { localTime, oneLine, plural, printable, truncate } from "../format.js";
import { withStore } from "../open-store.js";
import type { Colors, Output } from "../output.js";
import { resolveSession } from "../resolve-session.js";

/** Tool results and reasoning are cut to this many characters unless `--full`. */
const CUT_AT = 1000;
/** Arguments of a summarized tool call. */
const ARGS_SHOWN = 100;

export function registerShow(program: Command): void {
  program
    .command("show")
    .description("show a conversation: each message's role, local time and content, tool calls summarized")
    .argument("<session>", "an id, a unique id prefix, or a title")
    .option("--full", "do not cut long tool results and reasoning")
    .action(async (ref: string, opts: { full?: boolean }, command: Command) => {
      await withStore(command, { mustExist: true }, async ({ db }, out) => {
        const session = await db.exportSession(await resolveSession(db, ref));
        if (session === null) throw new CliError("NOT_FOUND", `session ${JSON.stringify(ref)} was deleted meanwhile`);
        out.result(session, () => printSession(out, session, opts.full === true));
      });
    });
}

function printSession(out: Output, s: SessionExport, full: boolean): void {
  const { c } = out;
  out.line(c.bold(s.title === null ? oneLine(s.id) : `${oneLine(s.title)}  ${c.dim(oneLine(s.id))}`));
  const facts = [`source ${oneLine(s.source)}`];
  if (s.model !== null) facts.push(`model ${oneLine(s.model)}`);
  facts.push(`started ${localTime(s.started_at, true)}`);
  if (s.ended_at !== null) facts.push(`ended ${localTime(s.ended_at, true)}${s.end_reason === null ? "" : ` (${oneLine(s.end_reason)})`}`);
  out.line(c.dim(facts.join(" · ")));
  const counts = [plural(s.messages.length, "message"), plural(s.tool_call_count, "tool call")];
  if (s.input_tokens || s.output_tokens) counts.push(`tokens ${s.input_tokens ?? 0} in / ${s.output_tokens ?? 0} out`);
  const cost = s.actual_cost_usd ?? s.estimated_cost_usd;
  if (cost) counts.push(`cost $${cost.toFixed(4)}`);
  if (s.parent_session_id !== null) counts.push(`parent ${oneLine(s.parent_session_id)}`);
  out.line(c.dim(counts.join(" · ")));
  for (const m of s.messages) printMessage(out, m, full);
}

function roleColor(c: Colors, role: string): (text: string) => string {
  switch (role) {
    case "user":
      return c.cyan;
    case "assistant":
      return c.green;
    case "tool":
      return c.yellow;
    default:
      return c.magenta;
  }
}

/** One message as `show` prints it (also `tail`'s). */
export function printMessage(out: Output, m: MessageRow, full: boolean): void {
  const { c } = out;
  const about: string[] = [];
  if (m.tool_name !== null) about.push(oneLine(m.tool_name));
  if (m.tool_call_id !== null) about.push(c.dim(`call ${oneLine(m.tool_call_id)}`));
  out.line();
  const role = roleColor(c, m.role)(c.bold(oneLine(m.role)));
  out.line([role, c.dim(localTime(m.timestamp, true)), ...about].join(" "));
  // Labelled and indented deeper, so reasoning reads apart from the reply without colours too.
  if (m.reasoning) {
    out.line(`  ${c.dim("reasoning:")}`);
    out.line(c.dim(indent(indent(cut(printable(m.reasoning), full ? Infinity : CUT_AT / 5, "reasoning")))));
    if (m.content !== null && m.content !== "") out.line(`  ${c.dim("reply:")}`);
  }
  if (m.content !== null && m.content !== "") {
    const limit = m.role === "tool" && !full ? CUT_AT : Infinity;
    const text = indent(cut(printable(m.content), limit, "result"));
    out.line(m.reasoning ? indent(text) : text);
  }
  for (const call of toolCalls(m.tool_calls)) out.line(`  ${c.yellow("→")} ${summarizeToolCall(call)}`);
}

function indent(text: string): string {
  return text.replace(/^/gm, "  ");
}

function cut(text: string, limit: number, what: string): string {
  const chars = [...text];
  if (chars.length <= limit) return text;
  return `${chars.slice(0, limit).join("")}… (${what} cut: ${chars.length - limit} more characters; --full shows all)`;
}

function toolCalls(value: unknown): unknown[] {
  if (value === null || value === undefined || value === "") return [];
  return Array.isArray(value) ? value : [value];
}

/** `name(arguments…)` for the OpenAI shape `{function: {name, arguments}}` and the plain `{name, arguments|input}`. */
function summarizeToolCall(call: unknown): string {
  const obj = typeof call === "object" && call !== null ? (call as Record<string, unknown>) : {};
  const fn = typeof obj.function === "object" && obj.function !== null ? (obj.function as Record<string, unknown>) : obj;
  const name = typeof fn.name === "string" ? fn.name : null;
  if (name === null) return truncate(oneLine(JSON.stringify(call) ?? String(call)), ARGS_SHOWN);
  const args = fn.arguments ?? fn.input ?? fn.args ?? "";
  const text = typeof args === "string" ? args : JSON.stringify(args);
  return `${oneLine(name)}(${truncate(oneLine(text), ARGS_SHOWN)})`;
}

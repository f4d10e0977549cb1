/** Trajectories (SPEC §9): training samples kept beside the database, one JSON line per run. */
import { appendFileSync } from "node:fs";

/**
 * Appends `{conversations, timestamp, model, completed}` as one line. The line goes out in a
 * single `O_APPEND` write, so concurrent writers in several processes never interleave lines.
 * A failure is logged, never thrown: saving a sample must not fail an agent's run.
 */
export function saveTrajectory(
  conversations: unknown,
  model: string,
  completed: boolean,
  filename?: string,
): void {
  const file = filename ?? (completed ? "trajectory_samples.jsonl" : "failed_trajectories.jsonl");
  try {
    const line = `${JSON.stringify({ conversations, timestamp: localIsoTimestamp(new Date()), model, completed })}\n`;
    appendFileSync(file, line, { encoding: "utf8" });
  } catch (err) {
    console.error(`sessiondb: could not save trajectory to ${file}: ${(err as Error).message}`);
  }
}

/** Local time in ISO 8601 without a zone, like Python's `datetime.now().isoformat()`. */
function localIsoTimestamp(d: Date): string {
  const pad = (n: number, width = 2) => String(n).padStart(width, "0");
  return (
    `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T` +
    `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}000`
  );
}

export function convertScratchpadToThink(text: string): string {
  return text.replaceAll("<REASONING_SCRATCHPAD>", "<think>").replaceAll("</REASONING_SCRATCHPAD>", "</think>");
}

export function hasIncompleteScratchpad(text: string): boolean {
  return text.includes("<REASONING_SCRATCHPAD>") && !text.includes("</REASONING_SCRATCHPAD>");
}

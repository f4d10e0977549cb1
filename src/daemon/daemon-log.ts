/**
 * The daemon's log: one event per line on stderr, as text (`<time> sessiondb: <event>`) or, with
 * `serve --log-format json`, one JSON object per line: `time`, `level`, `event`, and the event's
 * own fields (a slow request's `op`, `durationMs` and `batch`).
 */
export type LogFormat = "text" | "json";

/** What an event may carry besides its line; `level` defaults from the words of the line. */
export interface LogFields {
  level?: "info" | "warn" | "error";
  [field: string]: unknown;
}

export type DaemonLog = (line: string, fields?: LogFields) => void;

/** Failures are errors, refusals and incomplete work warnings; the rest is information. */
function levelOf(line: string): "info" | "warn" | "error" {
  if (/\b(failed|died|crash|cannot|error)\b/i.test(line)) return "error";
  if (/\b(refus|incomplete|replaced|removed|slow|retry|retrying)\w*/i.test(line)) return "warn";
  return "info";
}

export function daemonLog(format: LogFormat, write: (text: string) => void = (text) => process.stderr.write(text)): DaemonLog {
  if (format === "text") return (line) => write(`${new Date().toISOString()} sessiondb: ${line}\n`);
  return (line, fields = {}) => {
    const { level, ...rest } = fields;
    write(`${JSON.stringify({ time: new Date().toISOString(), level: level ?? levelOf(line), event: line, ...rest })}\n`);
  };
}

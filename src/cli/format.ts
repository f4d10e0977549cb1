/** Text for people: times, sizes, durations, and database text made safe for a terminal. */

const pad2 = (n: number) => String(n).padStart(2, "0");

/** Local time, `YYYY-MM-DD HH:MM` (or with seconds). */
export function localTime(unixSeconds: number, withSeconds = false): string {
  const d = new Date(unixSeconds * 1000);
  const date = `${d.getFullYear()}-${pad2(d.getMonth() + 1)}-${pad2(d.getDate())}`;
  const time = `${pad2(d.getHours())}:${pad2(d.getMinutes())}${withSeconds ? `:${pad2(d.getSeconds())}` : ""}`;
  return `${date} ${time}`;
}

/** "just now", "5m ago", "3h ago", "12d ago", else the local date. */
export function ago(unixSeconds: number, nowSeconds = Date.now() / 1000): string {
  const s = Math.max(0, nowSeconds - unixSeconds);
  if (s < 60) return "just now";
  if (s < 3600) return `${Math.floor(s / 60)}m ago`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ago`;
  if (s < 60 * 86400) return `${Math.floor(s / 86400)}d ago`;
  return localTime(unixSeconds).slice(0, 10);
}

/** "42s", "3m 12s", "2h 5m", "4d 3h". */
export function duration(seconds: number): string {
  const s = Math.floor(seconds);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
  return `${Math.floor(s / 86400)}d ${Math.floor((s % 86400) / 3600)}h`;
}

/** "512 B", "12.0 KiB", "3.4 MiB". */
export function size(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value.toFixed(1)} ${units[unit]}`;
}

export function plural(n: number, word: string, words = `${word}s`): string {
  return `${n} ${n === 1 ? word : words}`;
}

// C0 controls but TAB and LF, DEL, C1 controls, and the bidi overrides: escape sequences or
// reordering hidden in stored text must not reach the terminal.
const UNSAFE = /[\u0000-\u0008\u000B-\u001F\u007F-\u009F\u202A-\u202E\u2066-\u2069]/g;

/** Stored text made harmless for a terminal: control characters shown as `\xNN` / `\uNNNN`. */
export function printable(text: string): string {
  return text.replace(UNSAFE, (c) => {
    const code = c.charCodeAt(0);
    return code <= 0xff ? `\\x${code.toString(16).padStart(2, "0")}` : `\\u${code.toString(16).padStart(4, "0")}`;
  });
}

/** Printable, on one line: every run of whitespace becomes one space. */
export function oneLine(text: string): string {
  return printable(text.replace(/\s+/g, " ").trim());
}

/** At most `max` characters (code points), with `…` when cut. */
export function truncate(text: string, max: number): string {
  const chars = [...text];
  return chars.length <= max ? text : `${chars.slice(0, Math.max(0, max - 1)).join("")}…`;
}

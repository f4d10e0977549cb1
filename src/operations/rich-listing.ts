/** The rows of `listSessionsRich` (SPEC §3): the preview, and a compressed root shown as its tip. */
import type { RichSessionRow } from "../session-db.js";

/** The trimmed first 60 characters of the first user message, with "..." when cut. */
export function preview(raw: string): string {
  const text = [...raw.trim()];
  return text.length > 60 ? `${text.slice(0, 60).join("")}...` : text.join("");
}

/** A listed row as read (its preview's raw text) made into what is returned. */
export function finishRow(row: RichSessionRow): RichSessionRow {
  row.preview = preview(row.preview);
  return row;
}

/** The fields a compressed root shows from its tip; the rest (started_at, so the order) stay the root's. */
const PROJECTED = [
  "id", "ended_at", "end_reason", "message_count", "tool_call_count", "title", "last_active", "preview",
  "model", "system_prompt",
] as const;

/** Whether a listed row is a compressed root, to be shown as its chain's tip. */
export function isCompressedRoot(row: RichSessionRow): boolean {
  return row.end_reason === "compression";
}

/** The root as listed when its chain ends at `tip` (a row as read, raw preview): the tip's fields, the root's place. */
export function projectOntoRoot(root: RichSessionRow, tip: RichSessionRow): RichSessionRow {
  const projected: Record<string, unknown> = { ...root };
  for (const key of PROJECTED) projected[key] = key === "preview" ? preview(tip.preview) : tip[key];
  projected._lineage_root_id = root.id;
  return projected as unknown as RichSessionRow;
}

/**
 * Fitting a table to a terminal: the columns that identify a row are always shown, the others
 * join in order of importance while they fit, and the one flexible column takes what is left.
 */

export interface ColumnSpec {
  readonly name: string;
  /** The width its longest cell needs (the header included). */
  readonly want: number;
  /** Shown whatever the width (the id and the title of a session). */
  readonly required?: boolean;
  /** Takes the width left over, down to `min`; at most one column. */
  readonly flexible?: boolean;
  /** The narrowest useful width of a flexible or required column. */
  readonly min?: number;
}

/** One space between columns. */
const GAP = 1;

/**
 * The width of each column to show at `width` (a column left out has none). `specs` come in
 * order of importance. Required columns first: when they alone do not fit, the last required
 * column shrinks (not below its `min`); then each other column joins if it fits at its `want`
 * (a flexible one at its `min`), and the flexible column grows into the rest, up to its `want`.
 */
export function layoutColumns(specs: readonly ColumnSpec[], width: number): Map<string, number> {
  const widths = new Map<string, number>();
  const used = () => [...widths.values()].reduce((sum, w) => sum + w, 0) + Math.max(0, widths.size - 1) * GAP;
  const required = specs.filter((s) => s.required);
  for (const spec of required) widths.set(spec.name, spec.want);
  const last = required.at(-1);
  if (last !== undefined && used() > width) {
    widths.set(last.name, Math.max(last.min ?? last.want, last.want - (used() - width)));
  }
  for (const spec of specs) {
    if (spec.required) continue;
    const start = spec.flexible ? Math.min(spec.want, spec.min ?? spec.want) : spec.want;
    if (used() + GAP + start <= width) widths.set(spec.name, start);
  }
  const flexible = specs.find((s) => s.flexible && widths.has(s.name));
  if (flexible !== undefined) {
    const grown = widths.get(flexible.name)! + Math.max(0, width - used());
    widths.set(flexible.name, Math.min(flexible.want, grown));
  }
  return widths;
}

/**
 * At most `max` characters, cut in the middle with `…` so that both ends stay: a lineage's
 * `"my project #12"` keeps its `#12` however narrow the column.
 */
export function cutMiddle(text: string, max: number): string {
  const chars = [...text];
  if (chars.length <= max) return text;
  if (max <= 1) return "…".slice(0, max);
  const suffix = /\s#\d+$/.exec(text)?.[0] ?? "";
  const tail = Math.min(max - 1, Math.max([...suffix].length, Math.floor((max - 1) / 2)));
  const head = max - 1 - tail;
  return `${chars.slice(0, head).join("")}…${chars.slice(chars.length - tail).join("")}`;
}

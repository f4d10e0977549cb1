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

// East Asian wide and fullwidth characters, and emoji: two terminal columns each.
const WIDE = /[\u1100-\u115F\u2E80-\u303E\u3041-\u33FF\u3400-\u4DBF\u4E00-\u9FFF\uA000-\uA4CF\uAC00-\uD7A3\uF900-\uFAFF\uFE30-\uFE4F\uFF00-\uFF60\uFFE0-\uFFE6\u{1F300}-\u{1F64F}\u{1F900}-\u{1F9FF}\u{20000}-\u{3FFFD}]/u;

/** Terminal columns a character takes. */
function charWidth(char: string): number {
  return WIDE.test(char) ? 2 : 1;
}

/** Terminal columns the text takes (wide CJK characters count two). */
export function displayWidth(text: string): number {
  let width = 0;
  for (const char of text) width += charWidth(char);
  return width;
}

/** The longest start (`fromEnd`: end) of `chars` that fits in `width` columns. */
function fitting(chars: string[], width: number, fromEnd: boolean): string {
  const taken: string[] = [];
  let used = 0;
  for (const char of fromEnd ? [...chars].reverse() : chars) {
    if (used + charWidth(char) > width) break;
    used += charWidth(char);
    taken.push(char);
  }
  return (fromEnd ? taken.reverse() : taken).join("");
}

/**
 * At most `max` terminal columns, cut in the middle with `…` so that both ends stay: a lineage's
 * `"my project #12"` keeps its `#12` however narrow the column.
 */
export function cutMiddle(text: string, max: number): string {
  if (displayWidth(text) <= max) return text;
  if (max <= 1) return "…".slice(0, max);
  const chars = [...text];
  const suffix = /\s#\d+$/.exec(text)?.[0] ?? "";
  const tail = fitting(chars, Math.min(max - 1, Math.max(displayWidth(suffix), Math.floor((max - 1) / 2))), true);
  return `${fitting(chars, max - 1 - displayWidth(tail), false)}…${tail}`;
}

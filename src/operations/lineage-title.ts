/** Numbered lineages of titles (SPEC §3, "Titles"): "<base>", "<base> #2", "<base> #3", … */

const NUMBERED = /^(.*?) #(\d+)$/su;

/** The lineage a title belongs to: its base, without a trailing " #N". */
export function lineageBase(title: string): string {
  return NUMBERED.exec(title)?.[1] ?? title;
}

/**
 * The next title of the lineage of `base`, given the titles its sessions hold (the base itself and
 * any "<base> #N"): the base while none holds it, else one past the highest number, where the
 * un-numbered base counts as #1. Numbers are compared as integers of any size.
 */
export function nextLineageTitle(base: string, existing: readonly string[]): string {
  if (existing.length === 0) return base;
  let max = 1n;
  for (const title of existing) {
    const n = /^.* #(\d+)$/su.exec(title)?.[1];
    if (n !== undefined && BigInt(n) > max) max = BigInt(n);
  }
  return `${base} #${max + 1n}`;
}

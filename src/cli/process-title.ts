/**
 * Every local user can read every process's command line (`ps`, /proc/<pid>/cmdline): a
 * `--db postgres://user:secret@…` would show its password there for as long as the daemon runs.
 * The CLI rewrites its process title at once with each PostgreSQL URL less its secrets (the
 * password before the `@`, `password=` and `sslpassword=`). On Linux, Node writes the title over
 * the argv memory the kernel shows as cmdline, and blanks the rest of it.
 */
import { shownLocation } from "../engine-kind.js";

/** An argument as `ps` may show it: a URL (alone or as `--flag=URL`) without its secrets. */
function shown(arg: string): string {
  const flag = /^(--[\w-]+=)(.*)$/s.exec(arg);
  return flag !== null ? `${flag[1]}${shownLocation(flag[2]!)}` : shownLocation(arg);
}

/** Rewrites the process title when an argument carries a secret; leaves it alone otherwise. */
export function hideSecretsFromPs(argv: readonly string[] = process.argv): void {
  const visible = argv.map(shown);
  if (visible.every((arg, i) => arg === argv[i])) return;
  process.title = visible.join(" ");
}

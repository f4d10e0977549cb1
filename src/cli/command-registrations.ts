/**
 * Which command modules `sessiondb` loads. `serve` alone gets only its own: a daemon is a
 * long-lived process, and every module loaded stays in its main thread's heap for its whole life
 * (the other commands bring the client, direct mode, PostgreSQL, tables and progress bars, none
 * of which the daemon's main thread runs). Any other command line loads them all, so `--help`,
 * `help <command>` and usage errors are what they always were.
 */
import type { Command } from "commander";

export type Register = (program: Command) => void;

/** The global options that take a value (main.ts), so the value is not taken for the command. */
const VALUED_GLOBALS = new Set(["--db"]);

/** The command named on the command line: its first word that is neither an option nor an option's value. */
export function commandName(args: readonly string[]): string | undefined {
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === "--") return args[i + 1];
    if (!arg.startsWith("-")) return arg;
    if (VALUED_GLOBALS.has(arg)) i++;
  }
  return undefined;
}

export async function commandRegistrations(args: readonly string[]): Promise<Register[]> {
  if (commandName(args) === "serve") return [(await import("./commands/serve.js")).registerServe];
  const all = await Promise.all([
    import("./commands/serve.js").then((m) => m.registerServe),
    import("./commands/status.js").then((m) => m.registerStatus),
    import("./commands/stop.js").then((m) => m.registerStop),
    import("./commands/list.js").then((m) => m.registerList),
    import("./commands/show.js").then((m) => m.registerShow),
    import("./commands/tail.js").then((m) => m.registerTail),
    import("./commands/watch.js").then((m) => m.registerWatch),
    import("./commands/search.js").then((m) => m.registerSearch),
    import("./commands/export.js").then((m) => m.registerExport),
    import("./commands/import.js").then((m) => m.registerImport),
    import("./commands/copy.js").then((m) => m.registerCopy),
    import("./commands/title.js").then((m) => m.registerTitle),
    import("./commands/delete.js").then((m) => m.registerDelete),
    import("./commands/prune.js").then((m) => m.registerPrune),
    import("./commands/stats.js").then((m) => m.registerStats),
    import("./commands/service.js").then((m) => m.registerService),
    import("./commands/backup.js").then((m) => m.registerBackup),
    import("./commands/verify.js").then((m) => m.registerVerify),
    import("./commands/check.js").then((m) => m.registerCheck),
    import("./commands/optimize.js").then((m) => m.registerOptimize),
    import("./commands/spool.js").then((m) => m.registerSpool),
  ]);
  return all;
}

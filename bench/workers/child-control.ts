/** The child's side of the protocol in protocol.ts: config in, `ready`, `go`/`stop`, report out. */
import { createInterface } from "node:readline";

export class ChildControl<Config> {
  readonly config: Config;
  #stopped = false;
  #stopArgument: string | null = null;
  #go: Promise<void>;
  readonly #lines = createInterface({ input: process.stdin });

  constructor() {
    this.config = JSON.parse(process.argv[2] ?? "{}") as Config;
    this.#go = new Promise((resolve) => {
      this.#lines.on("line", (line) => {
        if (line === "go") resolve();
        if (line === "stop" || line.startsWith("stop ")) {
          this.#stopped = true;
          this.#stopArgument = line.length > 4 ? line.slice(5) : null;
          resolve();
        }
      });
      // A parent that goes away ends the run too.
      this.#lines.on("close", () => {
        this.#stopped = true;
        resolve();
      });
    });
  }

  /** Tells the parent this child is set up, then waits for the start signal. */
  async ready(): Promise<void> {
    process.stdout.write("ready\n");
    await this.#go;
  }

  /** True once the parent said `stop` (or went away). */
  get stopped(): boolean {
    return this.#stopped;
  }

  /** What the parent said with its `stop` (the watch bench's watchers: how many events to wait for), or null. */
  get stopArgument(): string | null {
    return this.#stopArgument;
  }

  /** Prints the report as the last line and stops listening, so the process can exit. */
  report(report: unknown): void {
    process.stdout.write(`${JSON.stringify(report)}\n`);
    this.#lines.close();
    process.stdin.destroy();
  }
}

/** Runs `main`, and on failure prints why and exits non-zero (the parent shows stderr). */
export function runChild(main: () => Promise<void>): void {
  main().catch((err: unknown) => {
    process.stderr.write(`${(err as Error)?.stack ?? String(err)}\n`);
    process.exit(1);
  });
}

/**
 * Where a command's output goes: machine output (`--json`: one JSON document on stdout) or text
 * for people, colored only on a terminal and when `NO_COLOR` is unset (https://no-color.org).
 */
import { once } from "node:events";
import type { Writable } from "node:stream";
import Table from "cli-table3";
import pc from "picocolors";

export type Colors = ReturnType<typeof pc.createColors>;

/** Width for tables on a terminal: `$COLUMNS` when set (as `ls` does), else the terminal's, else 80. */
function terminalWidth(stdout: { columns?: number }): number {
  const fromEnv = Number(process.env.COLUMNS);
  if (Number.isInteger(fromEnv) && fromEnv > 0) return fromEnv;
  return stdout.columns || 80;
}

export class Output {
  readonly json: boolean;
  /** Stdout is a terminal: tables fit its width; otherwise they are tab-separated and never cut. */
  readonly terminal: boolean;
  readonly colorEnabled: boolean;
  readonly c: Colors;
  readonly width: number;
  readonly #stdout: Writable;

  constructor(json: boolean, stdout: Writable & { isTTY?: boolean; columns?: number } = process.stdout) {
    this.json = json;
    this.#stdout = stdout;
    this.terminal = stdout.isTTY === true;
    this.colorEnabled = this.terminal && !process.env.NO_COLOR;
    this.c = pc.createColors(this.colorEnabled);
    this.width = terminalWidth(stdout);
  }

  /** One line of text for people. */
  line(text = ""): void {
    this.#stdout.write(`${text}\n`);
  }

  /** The `--json` result: one document, pretty-printed, on stdout. */
  printJson(value: unknown): void {
    this.#stdout.write(`${JSON.stringify(value, null, 2)}\n`);
  }

  /** `printJson` under `--json`, else the text `human()` prints. */
  result(value: unknown, human: () => void): void {
    if (this.json) this.printJson(value);
    else human();
  }

  /**
   * A borderless table whose columns have the given widths (cells are cut with `…` by the table),
   * the header in bold.
   */
  table(head: string[], widths: number[], rows: string[][]): void {
    const table = new Table({
      head: head.map((h) => this.c.bold(h)),
      colWidths: widths,
      wordWrap: false,
      chars: {
        top: "", "top-mid": "", "top-left": "", "top-right": "", bottom: "", "bottom-mid": "", "bottom-left": "",
        "bottom-right": "", left: "", "left-mid": "", mid: "", "mid-mid": "", right: "", "right-mid": "", middle: " ",
      },
      style: { head: [], border: [], "padding-left": 0, "padding-right": 0 },
    });
    table.push(...rows);
    this.line(table.toString().split("\n").map((l) => l.trimEnd()).join("\n"));
  }

  /** The same rows for programs: a header line, then one line per row, cells tab-separated, never cut. */
  tsv(head: string[], rows: string[][]): void {
    for (const cells of [head, ...rows]) this.line(cells.join("\t"));
  }

  /** A remark about the output, not part of it: on stdout for a terminal, else on stderr. */
  note(text: string): void {
    if (this.terminal) this.line(this.c.dim(text));
    else process.stderr.write(`${text}\n`);
  }
}

/** Writes a chunk and waits while the stream's buffer is full, so streaming keeps memory flat. */
export async function writeChunk(stream: Writable, chunk: string): Promise<void> {
  if (!stream.write(chunk)) await once(stream, "drain");
}

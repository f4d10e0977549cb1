/**
 * Where a command's output goes: machine output (`--json`: one JSON document on stdout) or text
 * for people, colored only on a terminal and when `NO_COLOR` is unset (https://no-color.org).
 */
import { once } from "node:events";
import type { Writable } from "node:stream";
import Table from "cli-table3";
import pc from "picocolors";

export type Colors = ReturnType<typeof pc.createColors>;

/** Terminal width for tables: the terminal's, else `$COLUMNS`, else 100. */
function terminalWidth(): number {
  const fromEnv = Number(process.env.COLUMNS);
  return process.stdout.columns || (Number.isInteger(fromEnv) && fromEnv > 0 ? fromEnv : 100);
}

export class Output {
  readonly json: boolean;
  readonly colorEnabled: boolean;
  readonly c: Colors;
  readonly width: number;
  readonly #stdout: Writable;

  constructor(json: boolean, stdout: Writable & { isTTY?: boolean } = process.stdout) {
    this.json = json;
    this.#stdout = stdout;
    this.colorEnabled = stdout.isTTY === true && !process.env.NO_COLOR;
    this.c = pc.createColors(this.colorEnabled);
    this.width = terminalWidth();
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
}

/** Writes a chunk and waits while the stream's buffer is full, so streaming keeps memory flat. */
export async function writeChunk(stream: Writable, chunk: string): Promise<void> {
  if (!stream.write(chunk)) await once(stream, "drain");
}

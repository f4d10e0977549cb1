import { isOpName } from "../operation-catalogue.js";
import { isControlOp } from "../protocol/control.js";

/** Requests answered since the daemon started, by op and outcome ("OK" or the error's code). */
export class RequestCounts {
  readonly #counts = new Map<string, number>();

  record(op: unknown, outcome: string): void {
    // Only known names become labels: a client sending made-up ops must not grow the table.
    const name = isOpName(op) || isControlOp(op) ? op : "unknown";
    const key = `${name}\u0000${outcome}`;
    this.#counts.set(key, (this.#counts.get(key) ?? 0) + 1);
  }

  snapshot(): Array<{ op: string; code: string; count: number }> {
    return [...this.#counts].map(([key, count]) => {
      const [op = "", code = ""] = key.split("\u0000");
      return { op, code, count };
    }).sort((a, b) => a.op.localeCompare(b.op) || a.code.localeCompare(b.code));
  }
}

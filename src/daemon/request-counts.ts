import { isWireOp } from "../operation-catalogue.js";
import { isControlOp } from "../protocol/control.js";

/** Requests answered since the daemon started, by op and outcome ("OK" or the error's code). */
export class RequestCounts {
  /** By op, then by outcome: no key is built per request. */
  readonly #counts = new Map<string, Map<string, number>>();

  record(op: unknown, outcome: string): void {
    // Only known names become labels: a client sending made-up ops must not grow the table.
    const name = isWireOp(op) || isControlOp(op) ? op : "unknown";
    let byOutcome = this.#counts.get(name);
    if (byOutcome === undefined) this.#counts.set(name, (byOutcome = new Map()));
    byOutcome.set(outcome, (byOutcome.get(outcome) ?? 0) + 1);
  }

  snapshot(): Array<{ op: string; code: string; count: number }> {
    return [...this.#counts]
      .flatMap(([op, byOutcome]) => [...byOutcome].map(([code, count]) => ({ op, code, count })))
      .sort((a, b) => a.op.localeCompare(b.op) || a.code.localeCompare(b.code));
  }
}

import { parseOperation } from "../operations/operation-params.js";
import { OPERATIONS, type CallOpName } from "../operation-catalogue.js";

/** Writes of one handle, run one after another in the order they were made. */
export class WriteQueue {
  #tail: Promise<unknown> = Promise.resolve();

  run<T>(write: () => Promise<T>): Promise<T> {
    const result = this.#tail.then(write);
    this.#tail = result.catch(() => undefined);
    return result;
  }

  /** Resolves once every write queued so far has finished. */
  idle(): Promise<void> {
    return this.#tail.then(() => undefined);
  }
}

/** A call of an operation answered with a promise, its arguments checked. */
export function parseCall(name: CallOpName, args: readonly unknown[]): { kind: "read" | "write"; params: unknown } {
  return { kind: OPERATIONS[name].kind, params: parseOperation(name, args) };
}

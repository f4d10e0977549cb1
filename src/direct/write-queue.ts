import { SessionDBError } from "../errors.js";
import { parseOperation } from "../sqlite/operations.js";
import { OPERATIONS, type OpName } from "../operation-catalogue.js";

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

/** A call of a non-streamed operation, its arguments checked (streamed ones are iterated instead). */
export function parseCall(name: OpName, args: readonly unknown[]): { kind: "read" | "write"; params: unknown } {
  const kind = OPERATIONS[name].kind;
  if (kind === "stream") throw new SessionDBError("INVALID_ARGUMENT", `${name} is streamed: iterate it instead`);
  return { kind, params: parseOperation(name, args) };
}

import type { SessionDB } from "./session-db.js";
import { OPERATION_KINDS, OP_NAMES, type OpName } from "./operation-catalogue.js";

/** The methods every store derives from the operation table (all but `exportAll` and `close`). */
export type OperationMethods = Omit<SessionDB, "mode" | "engine" | "close" | "exportAll">;

/**
 * Gives a store class one method per operation of the table, each a call of `call(name, args)`,
 * so no store can miss an operation or wire one differently.
 */
export function installOperationMethods(
  store: { prototype: { call(name: OpName, args: readonly unknown[]): Promise<unknown> } },
): void {
  for (const name of OP_NAMES) {
    if (OPERATION_KINDS[name] === "stream") continue;
    Object.defineProperty(store.prototype, name, {
      value: function (this: { call(name: OpName, args: readonly unknown[]): Promise<unknown> }, ...args: unknown[]) {
        return this.call(name, args);
      },
      writable: true,
      configurable: true,
    });
  }
}

import type { EngineOpName } from "../operation-catalogue.js";
import type { CheckedParams } from "../operations/operation-params.js";
import type { Page } from "../operations/page.js";
import type { Connection } from "./connection.js";

/**
 * One operation on a SQLite connection: what it runs on the arguments its parser checked
 * (`operations/operation-params.ts`, outside any transaction). `op` is the name it implements, so
 * the engine's table can check that each entry sits under its own name. Writes run inside a
 * write transaction owned by the caller (direct mode or the writer worker).
 */
export interface ReadOperation<P, R> {
  readonly kind: "read";
  readonly op: EngineOpName;
  run(db: Connection, params: P): R;
}

export interface WriteOperation<P, R> {
  readonly kind: "write";
  readonly op: EngineOpName;
  run(db: Connection, params: P): R;
}

export type { Page };

/** A read whose result is streamed in pages, so no size is ever held at once. */
export interface StreamOperation<P, C, T> {
  readonly kind: "stream";
  readonly op: EngineOpName;
  page(db: Connection, params: P, cursor: C | null): Page<T, C>;
}

export function read<K extends EngineOpName, R>(op: K, run: (db: Connection, params: CheckedParams<K>) => R): ReadOperation<CheckedParams<K>, R> & { op: K } {
  return { kind: "read", op, run };
}

export function write<K extends EngineOpName, R>(op: K, run: (db: Connection, params: CheckedParams<K>) => R): WriteOperation<CheckedParams<K>, R> & { op: K } {
  return { kind: "write", op, run };
}

export function stream<K extends EngineOpName, C, T>(
  op: K,
  page: (db: Connection, params: CheckedParams<K>, cursor: C | null) => Page<T, C>,
): StreamOperation<CheckedParams<K>, C, T> & { op: K } {
  return { kind: "stream", op, page };
}

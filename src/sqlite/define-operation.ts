import type { OpName } from "../operation-catalogue.js";
import type { Args } from "../operations/args.js";
import type { Connection } from "./connection.js";
import type { Page } from "../operations/page.js";

/**
 * Checks an operation's arguments. They come as an array no longer than the operation takes
 * (checked by `parseOperation`); `op` is the name the operation is registered under, for messages
 * that name it.
 */
export type Parser<P> = (args: Args, op: OpName) => P;

/**
 * One operation of the store: how to check its arguments (outside any transaction: this is also
 * where JSON is serialized and titles are cleaned) and how to run it on a connection.
 * Writes run inside a write transaction owned by the caller (direct mode or the writer worker).
 */
export interface ReadOperation<P, R> {
  readonly kind: "read";
  parse: Parser<P>;
  run(db: Connection, params: P): R;
}

export interface WriteOperation<P, R> {
  readonly kind: "write";
  parse: Parser<P>;
  run(db: Connection, params: P): R;
}

export type { Page };

/** A read whose result is streamed in pages, so no size is ever held at once. */
export interface StreamOperation<P, C, T> {
  readonly kind: "stream";
  parse: Parser<P>;
  page(db: Connection, params: P, cursor: C | null): Page<T, C>;
}

export function read<P, R>(parse: Parser<P>, run: (db: Connection, params: P) => R): ReadOperation<P, R> {
  return { kind: "read", parse, run };
}

export function write<P, R>(parse: Parser<P>, run: (db: Connection, params: P) => R): WriteOperation<P, R> {
  return { kind: "write", parse, run };
}

export function stream<P, C, T>(
  parse: Parser<P>,
  page: (db: Connection, params: P, cursor: C | null) => Page<T, C>,
): StreamOperation<P, C, T> {
  return { kind: "stream", parse, page };
}

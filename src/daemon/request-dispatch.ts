import { SessionDBError } from "../errors.js";
import { parseOperation } from "../operations/operation-params.js";
import { OPERATIONS, type EngineOpName, type ReadOpName, type StreamOpName, type WriteOpName } from "../operation-catalogue.js";
import { isControlOp } from "../protocol/control.js";
import type { Request } from "../protocol/messages.js";
import type { ClientConnection } from "./client-connection.js";
import type { ControlHandlers } from "./control-handlers.js";
import type { DaemonEngine, ReadSnapshot } from "./daemon-engine.js";
import type { ResolvedDaemonOptions } from "./daemon-options.js";
import type { ReadRequester } from "./reader-pool.js";
import type { WatchHub } from "./watch-hub.js";

/**
 * Where the daemon sends each request: a control op to its handler, a write to the writer, a read
 * to the readers, a streamed read page by page, a watch to the watch hub. Past `maxQueue` queued requests it refuses more
 * (OVERLOADED); while the daemon shuts down, only control ops are answered.
 */
export class RequestDispatch {
  readonly #options: Pick<ResolvedDaemonOptions, "maxQueue" | "requestTimeoutMs">;
  readonly #engine: DaemonEngine;
  readonly #control: ControlHandlers;
  readonly #closing: () => boolean;
  readonly #watches: WatchHub;
  #readsQueued = 0;

  constructor(
    options: Pick<ResolvedDaemonOptions, "maxQueue" | "requestTimeoutMs">,
    engine: DaemonEngine,
    control: ControlHandlers,
    closing: () => boolean,
    watches: WatchHub,
  ) {
    this.#watches = watches;
    this.#options = options;
    this.#engine = engine;
    this.#control = control;
    this.#closing = closing;
  }

  /** Requests waiting for the writer or a reader. */
  get queueDepth(): number {
    return this.#engine.writer.queueDepth + this.#readsQueued;
  }

  /**
   * `receivedAt`: when the request's frame was read, where its deadline starts. A write's promise
   * is the writer's own (no wrapper per request); a refusal is a rejection, never a throw.
   */
  handle(request: Request, connection: ClientConnection, receivedAt: number): Promise<unknown> {
    try {
      return this.#route(request, connection, receivedAt);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  #route(request: Request, connection: ClientConnection, receivedAt: number): Promise<unknown> {
    const deadline = Math.min(receivedAt + (request.timeoutMs ?? this.#options.requestTimeoutMs), request.deadlineEpochMs ?? Infinity);
    // Control ops are answered even while the daemon shuts down.
    if (isControlOp(request.op)) return Promise.resolve(this.#control[request.op](request.args, deadline));
    if (request.op === "unwatch") return this.#watches.unwatch(request.args, connection);
    if (this.#closing()) throw new SessionDBError("UNAVAILABLE", "the daemon is shutting down");
    if (this.queueDepth >= this.#options.maxQueue) {
      throw new SessionDBError("OVERLOADED", `the daemon has ${this.#options.maxQueue} requests queued; retry later`);
    }
    const kind = OPERATIONS[request.op].kind;
    // A subscription has no deadline: it lives until unwatch, its client leaves, or the daemon stops.
    if (kind === "watch") return this.#watches.subscribe(request.id, request.args, connection);
    const params = parseOperation(request.op as EngineOpName, request.args);
    if (kind === "write") {
      if (this.#engine.readOnly) throw this.#engine.readOnlyError(request.op);
      return this.#engine.writer.write(request.op as WriteOpName, params, deadline, request.idempotencyKey ?? null);
    }
    if (kind === "read") return this.#reply(request.op as ReadOpName, params, deadline, connection);
    return this.#stream(request.op as StreamOpName, params, request.id, connection, deadline - receivedAt);
  }

  /** A read answered to its client as the readers give it (SQLite's: already encoded). */
  async #reply(op: EngineOpName, params: unknown, deadline: number, requester: ReadRequester): Promise<unknown> {
    this.#readsQueued++;
    try {
      return await this.#engine.readers.reply(op, params, deadline, requester);
    } finally {
      this.#readsQueued--;
    }
  }

  /**
   * Sends a streamed result page by page, as fast as the client reads it, every page read on the
   * one snapshot taken when the request began. Each page has the request's time span as its own
   * deadline: the client waits page by page.
   */
  async #stream(op: StreamOpName, params: unknown, id: number, connection: ClientConnection, pageTimeoutMs: number): Promise<null> {
    let snapshot: ReadSnapshot;
    this.#readsQueued++;
    try {
      snapshot = await this.#engine.snapshots.open(op, params, Date.now() + pageTimeoutMs, connection);
    } finally {
      this.#readsQueued--;
    }
    try {
      let cursor: unknown = null;
      do {
        const page = await snapshot.page(cursor, Date.now() + pageTimeoutMs);
        if (page.items.length > 0) await connection.sendChunk(id, page.items);
        cursor = page.next;
      } while (cursor !== null && connection.open);
    } finally {
      void snapshot.close();
    }
    return null;
  }
}

import { fromWireError, SessionDBError } from "../errors.js";
import type { OpName } from "../operation-catalogue.js";
import type { ControlOp } from "../protocol/control.js";

/** The longest delay a Node timer takes (a longer one fires at once). */
const MAX_TIMER_MS = 2 ** 31 - 1;

export interface PendingRequest {
  op: OpName | ControlOp;
  args: unknown[];
  /** A write's idempotency key (null: none): with one, sending the write again is safe. */
  key: string | null;
  /** Handed to the socket: from then on the daemon may run it. */
  sent: boolean;
  /** Handed to a socket at least once (a write sent again after a lost connection was too). */
  everSent: boolean;
  /** Why it waits unsent when a lost connection made it wait for a new one (null: it did not). */
  lostWith: SessionDBError | null;
  /** A write whose reply does not come in time may or may not have been applied; a read changed nothing. */
  write: boolean;
  resolve(result: unknown): void;
  reject(err: SessionDBError): void;
  onChunk?: ((items: unknown[]) => void) | undefined;
  /** How long the request may take (or, streaming, each page), in ms. */
  timeoutMs: number;
  /** How long a sent request waits past its deadline for the daemon's own answer. */
  graceMs: number;
  /** Ms since the epoch; the daemon is told it too, and never starts the request after it. */
  deadline: number;
}

/**
 * The daemon client's requests awaiting their answers: their ids (the replies', which come in any
 * order), the ones not yet handed to the socket, and their deadlines, checked by one timer set
 * for the earliest of them. Not a timer per request (that cost a third of a client's CPU per call
 * when many processes each make one call at a time), nor a sweep every few ms (a wake-up per
 * sweep, where a deadline is seconds away): the timer fires when the first deadline can pass,
 * gives up what is due, and is set again for the next.
 */
export class PendingRequests {
  readonly #requests = new Map<number, PendingRequest>();
  /** Requests not yet handed to the socket, in order: it is backed up. */
  #unsent: number[] = [];
  #timer: NodeJS.Timeout | null = null;
  /** When the timer fires, ms since the epoch (Infinity: it is not set). */
  #timerAt = Infinity;
  /** Resolves `whenIdle()` once no request is pending. */
  #idle: (() => void) | null = null;
  #nextId = 1;

  get size(): number {
    return this.#requests.size;
  }

  /** Some request waits for the socket: a new one queues behind it. */
  get backedUp(): boolean {
    return this.#unsent.length > 0;
  }

  /** Registers a request under a fresh id (the one its reply will carry); its deadline runs from now. */
  add(request: Omit<PendingRequest, "sent" | "everSent" | "lostWith" | "deadline">): [number, PendingRequest] {
    const id = this.#nextId;
    this.#nextId = this.#nextId >= 0xffffffff ? 1 : this.#nextId + 1;
    // Field by field, not a spread: this runs for every call, and a spread copy cost more than
    // the rest of the bookkeeping together.
    const { op, args, key, write, resolve, reject, onChunk, timeoutMs, graceMs } = request;
    const deadline = Date.now() + timeoutMs;
    const pending: PendingRequest = {
      op, args, key, sent: false, everSent: false, lostWith: null, write, resolve, reject, onChunk, timeoutMs, graceMs, deadline,
    };
    this.#requests.set(id, pending);
    this.#checkBy(deadline);
    return [id, pending];
  }

  /** Puts a request in line for the socket. */
  queue(id: number): void {
    this.#unsent.push(id);
  }

  /** The next request in line for the socket that still waits, taken out of the line. */
  nextUnsent(): [number, PendingRequest] | undefined {
    for (let id = this.#unsent.shift(); id !== undefined; id = this.#unsent.shift()) {
      const pending = this.#requests.get(id);
      if (pending !== undefined && !pending.sent) return [id, pending];
    }
    return undefined;
  }

  /**
   * The connection was lost: the writes with a key and time left go back in line, unsent, to be
   * sent again on a new connection (applied once whatever the lost one did); the rest fail with
   * `err`. Returns how many wait.
   */
  keepResendable(err: SessionDBError): number {
    const now = Date.now();
    for (const [id, p] of [...this.#requests]) {
      if (p.write && p.key !== null && p.deadline > now) {
        p.sent = false;
        p.lostWith = err;
      } else {
        this.fail(id, err);
      }
    }
    this.#unsent = [...this.#requests.keys()];
    // Unsent again, they are due at their deadlines, no longer at their deadlines plus grace.
    for (const p of this.#requests.values()) this.#checkBy(p.deadline);
    return this.#requests.size;
  }

  /** Every pending request goes back in line, unsent, in the order it was made (the daemon read none of them). */
  requeueAll(): void {
    for (const p of this.#requests.values()) {
      p.sent = false;
      this.#checkBy(p.deadline);
    }
    this.#unsent = [...this.#requests.keys()];
  }

  /**
   * Gives a reply to its request: a page of a stream, or the final answer. False when no request
   * has its id (the daemon's goodbye, id 0, or an answer to one already given up).
   */
  answer(reply: Record<string, unknown>): boolean {
    const id = reply.id as number;
    const pending = this.#requests.get(id);
    if (pending === undefined) return false;
    if (Array.isArray(reply.chunk)) {
      // A stream's deadline is for its first page; each page keeps it alive.
      pending.deadline = Date.now() + pending.timeoutMs;
      pending.onChunk?.(reply.chunk);
      return true;
    }
    if (reply.ok === true) {
      this.#forget(id);
      pending.resolve(reply.result);
      return true;
    }
    const err = fromWireError(reply.error);
    if (err.code === "OUTCOME_UNKNOWN" && pending.write && pending.key !== null && pending.deadline > Date.now()) {
      // The daemon's writer died committing it: sent again with its key, it is applied once.
      pending.sent = false;
      this.#unsent.push(id);
      this.#checkBy(pending.deadline);
      return true;
    }
    this.#forget(id);
    pending.reject(err);
    return true;
  }

  /** Gives up one request with this error. */
  fail(id: number, err: SessionDBError): void {
    const pending = this.#requests.get(id);
    if (pending === undefined) return;
    this.#forget(id);
    pending.reject(err);
  }

  /** Gives up every request handed to the socket (its connection was lost) with this error. */
  failSent(err: SessionDBError): void {
    for (const [id, p] of [...this.#requests]) if (p.sent) this.fail(id, err);
  }

  /** Gives up every request with this error. */
  failAll(err: SessionDBError): void {
    for (const id of [...this.#requests.keys()]) this.fail(id, err);
  }

  /** Resolves once no request is pending. */
  whenIdle(): Promise<void> {
    return new Promise<void>((resolve) => {
      if (this.#requests.size === 0) resolve();
      else this.#idle = resolve;
    });
  }

  /** Drops a request that is answered or failed; the last one lets `whenIdle()` resolve. */
  #forget(id: number): void {
    this.#requests.delete(id);
    if (this.#requests.size === 0 && this.#idle !== null) {
      this.#idle();
      this.#idle = null;
    }
  }

  /** Makes sure the timer fires by `at` (ms since the epoch): set for it when it is set for later or not at all. */
  #checkBy(at: number): void {
    if (at >= this.#timerAt || !Number.isFinite(at)) return;
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timerAt = at;
    this.#timer = setTimeout(this.#expire, Math.min(Math.max(0, at - Date.now()), MAX_TIMER_MS));
    // The socket keeps the process alive while requests are pending; the timer need not.
    this.#timer.unref();
  }

  /** Gives up the requests whose time is up (a sent one's includes its grace), then sets the timer for the next. */
  readonly #expire = (): void => {
    this.#timer = null;
    this.#timerAt = Infinity;
    const now = Date.now();
    let next = Infinity;
    for (const [id, p] of this.#requests) {
      const unsent = !p.sent;
      const due = unsent ? p.deadline : p.deadline + p.graceMs;
      if (due > now) {
        if (due < next) next = due;
        continue;
      }
      this.#forget(id);
      p.reject(!unsent || (p.write && p.everSent) ? unanswered(p) : p.lostWith !== null ? notResent(p, p.lostWith) : notSent(p));
    }
    this.#checkBy(next);
  };
}

/** A request that waited in this process past its deadline: it was never sent, so never applied. */
export function notSent(p: PendingRequest): SessionDBError {
  return new SessionDBError("TIMEOUT", `${p.op} could not be sent within ${p.timeoutMs} ms (the connection to the daemon was backed up); it was not applied`);
}

/** A write that waited for a new connection, never sent, until its deadline: not applied. */
function notResent(p: PendingRequest, lostWith: SessionDBError): SessionDBError {
  return new SessionDBError("UNAVAILABLE", `${p.op} could not be sent within ${p.timeoutMs} ms: ${lostWith.message}; no daemon answered again; it was not applied`);
}

/** A sent request's deadline passed without its answer: a write's fate is unknown, a read just timed out. */
function unanswered(p: PendingRequest): SessionDBError {
  const waited = p.timeoutMs + p.graceMs;
  return p.write
    ? new SessionDBError(
        "OUTCOME_UNKNOWN",
        p.key !== null
          ? `${p.op} got no answer from the daemon within ${waited} ms (sent again with its idempotency key while time was left): it may or may not have been applied; sending it again with the same key applies it once`
          : `${p.op} got no answer from the daemon within ${waited} ms: it may or may not have been applied; read before retrying`,
      )
    : new SessionDBError("TIMEOUT", `${p.op} got no answer from the daemon within ${waited} ms`);
}

/**
 * What the benchmark tells its child processes and what they report back. A child reads its
 * config as JSON from argv[2], prints `ready` once set up, starts at `go` on stdin, ends at its
 * deadline or at `stop`, and prints its report as the last line of stdout. The Python writer
 * (python-jitter.py) speaks the same protocol.
 */

/** One appending client of the convoy (or the writer of the read-side checks). */
export interface WriterConfig {
  db: string;
  /** The daemon's socket (daemon modes only). */
  socket: string | null;
  /** The session this client appends to; it is created before `ready`. */
  sessionId: string;
  /** A JSON array of `GeneratedMessage`, appended in turn starting at `offset`. */
  messagesFile: string;
  offset: number;
  /** Run length after `go`; `stop` on stdin ends it earlier. */
  seconds: number;
  synchronous: "FULL" | "NORMAL";
  /** What each call does: append, or ping the daemon (no database work; the daemon client only). */
  operation: "append" | "ping";
  /** Appends kept in flight (daemon client). */
  inFlight: number;
  /** Appends per transaction (ceiling). */
  batch: number;
  /** Calls made before `ready` (JIT, caches, connections warm), outside the measurement. */
  warmup: number;
  /** The daemon client's idempotency keys on its writes (default true; false for `daemon-keyless`). */
  keys?: boolean;
}

export interface WriterReport {
  /** Acknowledged appends of the warm-up, before `go` (they are in the file too). */
  warmupAppends: number;
  appends: number;
  failures: number;
  /** Failures by error code (or message, for plain SQLite errors). */
  errors: Record<string, number>;
  /** Application-level retries (jittered retry modes), null where the mode has none. */
  retries: number | null;
  /** Epoch milliseconds of `go` and of the last completion. */
  startMs: number;
  endMs: number;
  /** Latency of every successful append, in ms. */
  latenciesMs: number[];
  /** CPU time (user + system) this process used between `go` and the end, in ms. */
  cpuMs: number;
  /** Over the same time: how long this process's threads ran, and how long they were ready to run
   *  but waited for a core (Linux's schedstat); null where the kernel does not tell. */
  sched: { runMs: number; waitMs: number } | null;
}

/** A reader looping one search (the WAL growth check). */
export interface SearchLoopConfig {
  db: string;
  socket: string | null;
  query: string;
  seconds: number;
}

export interface SearchLoopReport {
  loops: number;
  startMs: number;
  endMs: number;
  latenciesMs: number[];
}

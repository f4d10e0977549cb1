/** The PostgreSQL daemon's snapshots for streamed reads (its `DaemonSnapshots`), over the engine's `PgSnapshot`. */
import { SessionDBError } from "../errors.js";
import type { StreamOpName } from "../operation-catalogue.js";
import type { PgPool } from "../pg/pg-connection.js";
import { PgSnapshot } from "../pg/pg-snapshot.js";
import { snapshotPage } from "../pg/pg-snapshot-page.js";
import type { DaemonSnapshots, ReadSnapshot, SnapshotStats } from "./daemon-engine.js";

/**
 * The PostgreSQL daemon's snapshots for streamed reads: connections of a pool of their own (so a
 * slow export never takes a reader connection from point reads), at most `max` at once; further
 * exports wait for one in the pool.
 */
export class PgSnapshots implements DaemonSnapshots {
  readonly #pool: PgPool;
  readonly #open = new Set<PgSnapshot>();
  #pagesRead = 0;
  #closed = false;

  constructor(pool: PgPool) {
    this.#pool = pool;
  }

  async open(op: StreamOpName, params: unknown, deadline: number): Promise<ReadSnapshot> {
    if (this.#closed) throw new SessionDBError("UNAVAILABLE", "the daemon is shutting down");
    if (Date.now() >= deadline) throw new SessionDBError("TIMEOUT", `${op} was not started before its deadline`);
    const snapshot = await PgSnapshot.open(this.#pool);
    this.#open.add(snapshot);
    return {
      page: async (cursor, pageDeadline) => {
        if (Date.now() >= pageDeadline) throw new SessionDBError("TIMEOUT", `${op}: its next page was not started before its deadline`);
        const page = await snapshotPage(snapshot, op, params, cursor);
        this.#pagesRead++;
        return page;
      },
      close: async () => {
        this.#open.delete(snapshot);
        await snapshot.close();
      },
    };
  }

  stats(): SnapshotStats {
    return { open: this.#open.size, pagesRead: this.#pagesRead };
  }

  async close(): Promise<void> {
    this.#closed = true;
    await Promise.all([...this.#open].map((s) => s.close()));
    this.#open.clear();
    await this.#pool.end().catch(() => undefined);
  }
}

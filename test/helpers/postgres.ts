/**
 * One throwaway PostgreSQL server per test file (./postgres-server.ts), started in `before` and
 * stopped in `after`; each test gets a fresh database on it.
 */
import { after, before } from "node:test";
import type { TestContext } from "node:test";
import { PgServer } from "./postgres-server.js";

export { PgServer, postgresBinDir } from "./postgres-server.js";

/** This test file's server (started before its tests, stopped after them), and a fresh database on it per test. */
export interface PgServerHandle {
  (): PgServer;
  /** `PgServer.freshDatabase` on this file's server. */
  fresh(t: TestContext): string;
}

export function usePgServer(): PgServerHandle {
  let server: PgServer | null = null;
  before(async () => {
    server = PgServer.start();
    await server.prepareTemplate();
  });
  after(() => server?.stop());
  const get = () => {
    if (server === null) throw new Error("the PostgreSQL server is not started yet");
    return server;
  };
  return Object.assign(get, { fresh: (t: TestContext) => get().freshDatabase(t) });
}

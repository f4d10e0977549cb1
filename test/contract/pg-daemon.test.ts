/** The contract suite on PostgreSQL through a daemon: a `serve --db postgres://…` per test's database. */
import { runContractSuite } from "./contract-suite.js";
import { daemonOpener } from "../helpers/daemon-opener.js";
import { usePgServer } from "../helpers/postgres.js";

const server = usePgServer();

runContractSuite("postgres, daemon", Object.assign(daemonOpener(), { location: server.fresh }));

/** The contract suite on PostgreSQL in direct mode: a throwaway server, a fresh database per test. */
import { openSessionDB } from "../../src/index.js";
import { runContractSuite } from "./contract-suite.js";
import { usePgServer } from "../helpers/postgres.js";

const server = usePgServer();

runContractSuite("postgres, direct", Object.assign((url: string) => openSessionDB({ path: url, mode: "direct" }), { location: server.fresh }));

/**
 * The contract suite against the daemon client: every test's database gets its own real `serve`
 * process, stopped when the suite closes the handle; every one must exit 0.
 */
import { runContractSuite } from "./contract/contract-suite.js";
import { daemonOpener } from "./helpers/daemon-opener.js";

runContractSuite("daemon", daemonOpener());

/**
 * The contract suite through a daemon: every test's database gets its own real `serve` process,
 * started when the suite opens the database and stopped (SIGTERM) when the suite closes the
 * handle; every one must exit 0. Run with mode "daemon" and with mode "auto" (the default), which
 * must find that daemon. The opener is shared with the PostgreSQL daemon suite.
 */
import { runContractSuite } from "./contract-suite.js";
import { daemonOpener } from "../helpers/daemon-opener.js";

/** The contract suite over a handle opened in `mode` while a daemon serves the file. */
export function runServedContractSuite(mode: "daemon" | "auto"): void {
  runContractSuite(mode, daemonOpener(mode));
}

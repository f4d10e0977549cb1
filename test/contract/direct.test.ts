import { openSessionDB } from "../../src/index.js";
import { runContractSuite } from "./contract-suite.js";

runContractSuite("direct", (path) => openSessionDB({ path, mode: "direct" }));

import { runServedContractSuite } from "./contract/served-suite.js";

runServedContractSuite("auto");

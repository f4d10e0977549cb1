import { runServedContractSuite } from "./served-suite.js";

runServedContractSuite("daemon");

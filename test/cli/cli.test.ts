/** `sessiondb` with no daemon: every command on the file directly. */
import { cliSuite } from "../helpers/cli-suite.js";

cliSuite("direct");

import { readFileSync } from "node:fs";

/** The package's version, read once from package.json (two levels above the built file). */
export const VERSION: string = (
  JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string }
).version;

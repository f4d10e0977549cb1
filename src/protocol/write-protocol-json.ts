/**
 * Run by `npm run build` after tsc: writes the protocol description (protocol-description.ts)
 * to docs/protocol.json and python/sessiondb/protocol.json, both committed. A file already up to
 * date is left alone.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { PROTOCOL_JSON_PATHS, protocolJsonText } from "./protocol-description.js";

/** The repository's root, three levels above the built file (dist/src/protocol/). */
const ROOT = new URL("../../../", import.meta.url);

const text = protocolJsonText();
for (const path of PROTOCOL_JSON_PATHS) {
  const file = new URL(path, ROOT);
  if (existsSync(file) && readFileSync(file, "utf8") === text) continue;
  writeFileSync(file, text);
  process.stdout.write(`wrote ${path}\n`);
}

import { readFileSync } from "node:fs";

/** `uid N (name)`, the name from /etc/passwd when it has one. */
export function userName(uid: number): string {
  try {
    const line = readFileSync("/etc/passwd", "utf8").split("\n").find((l) => l.split(":")[2] === String(uid));
    const name = line?.split(":")[0];
    return name ? `uid ${uid} (${name})` : `uid ${uid}`;
  } catch {
    return `uid ${uid}`;
  }
}

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestContext } from "node:test";

/** A fresh directory for one test, removed when the test ends. */
export function tempDir(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), "sdb-"));
  t.after(() => removeTree(dir));
  return dir;
}

/**
 * Removes a test's directory. node:test runs `after` hooks in the order they were added, so a
 * daemon started in the directory may still be running while it goes; a daemon makes a removed
 * socket or lock file again, which can land mid-removal (ENOTEMPTY). Retrying covers that.
 */
export function removeTree(dir: string): void {
  rmSync(dir, { recursive: true, force: true, maxRetries: 20, retryDelay: 50 });
}

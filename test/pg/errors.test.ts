/** How PostgreSQL's and Node's errors are told apart: a lost connection is run again or answered UNAVAILABLE, never INTERNAL. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { isConnectionError, toPgSessionDBError } from "../../src/pg/pg-errors.js";

/** An error as node-postgres passes one on: a server's (SQLSTATE `code`) or a socket's (errno `code` and `syscall`). */
function failure(message: string, fields: Record<string, unknown>): Error {
  return Object.assign(new Error(message), fields);
}

test("a socket's EPIPE (five capitals, like a SQLSTATE) is a lost connection, not an unknown SQLSTATE", () => {
  const epipe = failure("write EPIPE", { code: "EPIPE", errno: -32, syscall: "write" });
  assert.equal(isConnectionError(epipe), true);
  assert.equal(toPgSessionDBError(epipe).code, "UNAVAILABLE");
});

test("the server ending a connection (shutdown, crash, startup, database dropped, idle timeouts) is a lost connection; a cancelled statement is not", () => {
  for (const state of ["57P01", "57P02", "57P03", "57P04", "57P05", "25P03", "08006"]) {
    const err = failure("terminating connection", { code: state, severity: "FATAL" });
    assert.equal(isConnectionError(err), true, state);
    assert.equal(toPgSessionDBError(err).code, "UNAVAILABLE", state);
  }
  const timeout = failure("canceling statement due to statement timeout", { code: "57014", severity: "ERROR" });
  assert.equal(isConnectionError(timeout), false);
  assert.equal(toPgSessionDBError(timeout).code, "BUSY");
});

import { connect, type Socket } from "node:net";
import { SessionDBError } from "../errors.js";
import { databaseIdentity, type DatabaseLocation } from "../engine-kind.js";
import { fileIdentity, sameFile } from "../file-identity.js";
import { userName } from "../user-name.js";
import { checkSocket, UntrustedSocketError } from "./socket-trust.js";

/** The buffer replies are read into; larger frames are assembled from several reads. */
const READ_BUFFER_BYTES = 64 * 1024;

export function unavailable(socketPath: string, why: string): SessionDBError {
  return new SessionDBError("UNAVAILABLE", `no sessiondb daemon answers on ${socketPath}: ${why}`);
}

/**
 * A connected socket to the daemon on `socketPath`, once it is checked to be this user's (and
 * connected through the directory that check opened); UNAVAILABLE when nothing answers within
 * `connectTimeoutMs`. Replies are read into one buffer of the connection's own (`onread`), not a
 * new one per read through the stream machinery: a client making one call at a time wakes for
 * every reply.
 */
export function connectSocket(socketPath: string, connectTimeoutMs: number, onBytes: (bytes: Buffer) => void): Promise<Socket> {
  const trust = checkSocket(socketPath);
  if (!trust.ok) return Promise.reject(trust.foreign ? new UntrustedSocketError(socketPath, trust.reason) : unavailable(socketPath, trust.reason));
  const onread = {
    buffer: Buffer.allocUnsafe(READ_BUFFER_BYTES),
    callback: (n: number, buf: Buffer) => {
      onBytes(buf.subarray(0, n));
      return true;
    },
  };
  return new Promise<Socket>((resolve, reject) => {
    const s = connect({ path: trust.connectPath, onread });
    const timer = setTimeout(() => {
      s.destroy();
      reject(unavailable(socketPath, `no answer within ${connectTimeoutMs} ms`));
    }, connectTimeoutMs);
    s.once("connect", () => {
      clearTimeout(timer);
      resolve(s);
    });
    s.once("error", (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      reject(
        err.code === "EACCES"
          ? new UntrustedSocketError(socketPath, `it belongs to ${userName(trust.owner)}, whose daemon this user may not connect to (EACCES)`)
          : unavailable(socketPath, err.code ?? err.message),
      );
    });
  }).finally(() => trust.release());
}

/**
 * Whether a daemon saying it serves `served` serves the database at `path`: a PostgreSQL database
 * by its identity (the URL without its password); a file by its real path, or — opened under
 * another name (a hard link) — by being the same file (device and inode).
 */
export function servesThis(served: string, { engine, path }: DatabaseLocation): boolean {
  if (served === databaseIdentity({ engine, path })) return true;
  return engine === "sqlite" && sameFile(fileIdentity(served), fileIdentity(path));
}

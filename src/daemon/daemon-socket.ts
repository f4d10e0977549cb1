import { randomBytes } from "node:crypto";
import { chmodSync, linkSync, lstatSync, unlinkSync, type Stats } from "node:fs";
import { connect, createServer, type Server, type Socket } from "node:net";
import { dirname, join } from "node:path";
import { SessionDBError } from "../errors.js";
import { MAX_SOCKET_PATH_BYTES } from "../socket-path.js";
import { userName } from "../user-name.js";
import { probeDaemon } from "../protocol/probe.js";

/**
 * Connections waiting to be accepted. A Unix socket refuses a connect past it at once (EAGAIN,
 * no retry), so a burst of clients starting together needs room; the kernel caps it at somaxconn.
 */
const LISTEN_BACKLOG = 4096;

/**
 * One Unix socket the daemon listens on (SPEC §5). It claims its path first: free, or a stale
 * socket of this user that nothing answers on (a crashed daemon's: removed). Anything else — a
 * file that is not a socket, a live socket, another user's socket — is never removed: the daemon
 * refuses to start, naming it. On close it removes the socket only while it is still the one it
 * made (same device and inode), never what someone put there since.
 */
export class DaemonSocket {
  readonly path: string;
  readonly #server: Server;
  /** The socket file this made; null for a socket passed by systemd, whose file is the unit's. */
  readonly #made: Stats | null;

  private constructor(path: string, server: Server, made: Stats | null) {
    this.path = path;
    this.#server = server;
    this.#made = made;
  }

  /**
   * Listens on a socket systemd passed (socket activation: the listening socket at `fd`, its file
   * made at `path` by the unit, with the unit's owner and mode). The file is the unit's: never
   * replaced, never removed, so the next connection after the daemon exits starts it again.
   */
  static async adopt(fd: number, path: string, onConnection: (socket: Socket) => void): Promise<DaemonSocket> {
    const server = createServer({ allowHalfOpen: true }, onConnection);
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen({ fd, backlog: LISTEN_BACKLOG }, () => {
        server.off("error", reject);
        resolve();
      });
    }).catch((err: NodeJS.ErrnoException) => {
      throw new SessionDBError("IO", `cannot listen on the socket systemd passed (fd ${fd}, LISTEN_FDS): ${err.message}`);
    });
    return new DaemonSocket(path, server, null);
  }

  static async listen(path: string, onConnection: (socket: Socket) => void): Promise<DaemonSocket> {
    await claim(path);
    // Node (libuv) unlinks the name it bound when the server closes, whatever is there by then:
    // bind a private name, link the socket to its path (never replacing a file that appeared
    // meanwhile) and drop the private name, so the close removes nothing and we remove only ours.
    const bound = privateName(path);
    // Half-open: a client that ends its side after its last request still gets every reply.
    const server = createServer({ allowHalfOpen: true }, onConnection);
    const previousUmask = process.umask(0o177);
    try {
      await new Promise<void>((resolve, reject) => {
        server.once("error", reject);
        server.listen({ path: bound, backlog: LISTEN_BACKLOG }, () => {
          server.off("error", reject);
          resolve();
        });
      });
    } catch (err) {
      throw listenError(path, err as NodeJS.ErrnoException);
    } finally {
      process.umask(previousUmask);
    }
    try {
      chmodSync(bound, 0o600);
      if (bound !== path) linkSync(bound, path);
    } catch (err) {
      server.close();
      throw listenError(path, err as NodeJS.ErrnoException);
    } finally {
      if (bound !== path) unlinkSync(bound);
    }
    return new DaemonSocket(path, server, lstatSync(path));
  }

  /** Whether the path still names the socket this made (nobody removed it, or its folder). */
  get present(): boolean {
    if (this.#made === null) return true;
    const made = this.#made;
    try {
      const now = lstatSync(this.path, { throwIfNoEntry: false });
      return now !== undefined && now.dev === made.dev && now.ino === made.ino;
    } catch {
      return false;
    }
  }

  /** Stops accepting and removes the socket file if it is still ours; resolves once every connection has ended. */
  close(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.#server.close(() => resolve()));
    if (this.#made === null) return closed;
    const made = this.#made;
    try {
      const now = lstatSync(this.path, { throwIfNoEntry: false });
      if (now !== undefined && now.dev === made.dev && now.ino === made.ino) unlinkSync(this.path);
    } catch {
      // its directory went away meanwhile: nothing of ours is left to remove
    }
    return closed;
  }
}

/** Makes `path` free for a new socket, or refuses (see DaemonSocket). */
async function claim(path: string): Promise<void> {
  const found = lstatSync(path, { throwIfNoEntry: false });
  if (found === undefined) return;
  if (!found.isSocket()) {
    throw new SessionDBError(
      "IO",
      `refusing to start: ${path}, where the daemon's socket goes, is ${kindOf(found)}, not a socket; it is never removed (move it away, or give --socket another path)`,
    );
  }
  const me = process.getuid?.();
  if (me !== undefined && found.uid !== me) {
    throw new SessionDBError(
      "UNAVAILABLE",
      `refusing to start: ${path} is a socket of ${userName(found.uid)}, not of this user (uid ${me}); a daemon of that user may serve this database (it is not removed)`,
    );
  }
  if (await answers(path)) {
    const hello = await probeDaemon(path, 1000);
    const who = hello === null ? "a process that is not a sessiondb daemon" : `a sessiondb daemon (pid ${hello.pid}) serving ${hello.database}`;
    throw new SessionDBError("UNAVAILABLE", `refusing to start: ${who} already listens on ${path}`);
  }
  unlinkSync(path);
}

/** Whether a process accepts connections on the socket (a refused connect means a dead one's file). */
function answers(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(path);
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", (err: NodeJS.ErrnoException) => resolve(err.code !== "ECONNREFUSED" && err.code !== "ENOENT"));
  });
}

/** An unpredictable name beside `path` to bind first; `path` itself when that would not fit sockaddr_un. */
function privateName(path: string): string {
  const name = join(dirname(path), `.sdb-${randomBytes(6).toString("hex")}`);
  return Buffer.byteLength(name) <= MAX_SOCKET_PATH_BYTES ? name : path;
}

function kindOf(stat: Stats): string {
  if (stat.isFile()) return `a regular file (${stat.size} bytes)`;
  if (stat.isDirectory()) return "a directory";
  if (stat.isSymbolicLink()) return "a symbolic link";
  return "a special file";
}

function listenError(path: string, err: NodeJS.ErrnoException): SessionDBError {
  if (err.code === "EADDRINUSE" || err.code === "EEXIST") {
    return new SessionDBError("UNAVAILABLE", `refusing to start: another process created ${path} while this daemon was starting`);
  }
  return new SessionDBError("IO", `cannot create the daemon's socket ${path}: ${err.message}`, { cause: err });
}

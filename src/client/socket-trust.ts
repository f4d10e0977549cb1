import { closeSync, constants, existsSync, fstatSync, lstatSync, openSync } from "node:fs";
import { basename, dirname } from "node:path";
import { SessionDBError } from "../errors.js";
import { MAX_SOCKET_PATH_BYTES } from "../socket-path.js";
import { userName } from "../user-name.js";

/** Where a directory opened by this process can be named without looking its path up again. */
const FD_DIR = "/proc/self/fd";
/** S_ISVTX: in a sticky directory only a file's owner may remove or rename it. */
const STICKY_BIT = 0o1000;

/**
 * Whether a socket may be trusted with this user's writes (SPEC §5): only a daemon of this user or
 * root, at a path no other user can swap. `connectPath` then names the socket through the
 * directory that was checked (its open descriptor), so a directory renamed or replaced between
 * the check and the connect cannot redirect it; `release()` closes that descriptor.
 */
export type SocketCheck =
  | { readonly ok: true; readonly connectPath: string; readonly owner: number; release(): void }
  /** `foreign`: someone else's socket or directory, not merely no daemon. */
  | { readonly ok: false; readonly foreign: boolean; readonly reason: string };

export function checkSocket(socketPath: string): SocketCheck {
  const me = process.getuid?.();
  if (me === undefined) return { ok: true, connectPath: socketPath, owner: 0, release: () => undefined };
  const dir = dirname(socketPath);
  let fd: number;
  try {
    fd = openSync(dir, constants.O_RDONLY | constants.O_DIRECTORY);
  } catch (err) {
    return { ok: false, foreign: false, reason: (err as NodeJS.ErrnoException).code ?? String(err) };
  }
  const check = inspect(fd, me, socketPath);
  if (!check.ok) closeSync(fd);
  return check;
}

function inspect(fd: number, me: number, socketPath: string): SocketCheck {
  const dir = dirname(socketPath);
  const trusted = (uid: number) => uid === me || uid === 0;
  const refuse = (reason: string): SocketCheck => ({
    ok: false,
    foreign: true,
    reason: `${reason}; refusing to send this user's requests there (start your own daemon, or use --direct / mode "direct")`,
  });
  const dirStat = fstatSync(fd);
  if (!trusted(dirStat.uid)) return refuse(`its directory ${dir} belongs to ${userName(dirStat.uid)}, not to this user (uid ${me})`);
  const viaFd = existsSync(FD_DIR) ? `${FD_DIR}/${fd}/${basename(socketPath)}` : socketPath;
  const socket = lstatSync(viaFd, { throwIfNoEntry: false });
  if (socket === undefined) return { ok: false, foreign: false, reason: "ENOENT" };
  if (!socket.isSocket()) return { ok: false, foreign: false, reason: "it is not a socket" };
  if (!trusted(socket.uid)) {
    return refuse(`the socket belongs to ${userName(socket.uid)}, not to this user (uid ${me}): that is another user's process`);
  }
  const othersMayWrite = (dirStat.mode & 0o022) !== 0;
  const sticky = (dirStat.mode & STICKY_BIT) !== 0;
  if (othersMayWrite && !sticky) {
    return refuse(`its directory ${dir} is writable by other users and not sticky (mode ${(dirStat.mode & 0o7777).toString(8)}): anyone could replace the socket`);
  }
  const connectPath = Buffer.byteLength(viaFd) <= MAX_SOCKET_PATH_BYTES ? viaFd : socketPath;
  return { ok: true, connectPath, owner: socket.uid, release: () => closeSync(fd) };
}

/**
 * UNAVAILABLE because the socket is another user's (or could be swapped by one): reported as
 * such, so nobody takes it for "no daemon runs". The Python client raises the same-named error.
 */
export class UntrustedSocketError extends SessionDBError {
  constructor(socketPath: string, reason: string) {
    super("UNAVAILABLE", `${socketPath} is not a socket of this user's daemon: ${reason}`);
  }
}

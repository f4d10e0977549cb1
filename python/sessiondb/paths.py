"""Where the database and its daemon's socket are (SPEC 2 and 5), computed exactly as the
TypeScript side does (src/socket-path.ts), and whether a socket may be trusted."""
from __future__ import annotations

import hashlib
import os
import stat
from typing import Mapping, Optional

from .errors import UntrustedSocketError

# Unix socket paths must fit in sockaddr_un (108 bytes with the terminating NUL).
MAX_SOCKET_PATH_BYTES = 107


def default_database_path(env: Optional[Mapping[str, str]] = None) -> str:
    """``$SESSIONDB_PATH``, else ``$HERMES_HOME/state.db``, else ``~/.hermes/state.db``."""
    env = os.environ if env is None else env
    if env.get("SESSIONDB_PATH"):
        return os.path.abspath(env["SESSIONDB_PATH"])
    if env.get("HERMES_HOME"):
        return os.path.abspath(os.path.join(env["HERMES_HOME"], "state.db"))
    return os.path.join(os.path.expanduser("~"), ".hermes", "state.db")


def real_database_path(path: "os.PathLike[str] | str") -> str:
    """The file's real path (links resolved), also for a file that does not exist yet."""
    absolute = os.path.abspath(os.fspath(path))
    if os.path.exists(absolute):
        return os.path.realpath(absolute)
    parent = os.path.dirname(absolute)
    if os.path.exists(parent):
        return os.path.join(os.path.realpath(parent), os.path.basename(absolute))
    return absolute


def private_runtime_dir(env: Optional[Mapping[str, str]] = None) -> str:
    """``$XDG_RUNTIME_DIR/sessiondb``, else ``/tmp/sessiondb-<uid>`` (the daemon creates it)."""
    env = os.environ if env is None else env
    if env.get("XDG_RUNTIME_DIR"):
        return os.path.join(env["XDG_RUNTIME_DIR"], "sessiondb")
    return os.path.join("/tmp", f"sessiondb-{os.getuid()}")


def default_socket_path(database_path: "os.PathLike[str] | str", env: Optional[Mapping[str, str]] = None) -> str:
    """``<real db path>.sock`` when it fits, else a hash-named file in the private runtime dir."""
    real = real_database_path(database_path)
    beside = f"{real}.sock"
    if len(os.fsencode(beside)) <= MAX_SOCKET_PATH_BYTES:
        return beside
    name = hashlib.sha256(real.encode("utf-8", "surrogateescape")).hexdigest()[:32] + ".sock"
    return os.path.join(private_runtime_dir(env), name)


def check_socket_trust(socket_path: str) -> bool:
    """False when nothing is at the path. Raises UntrustedSocketError when the socket is not
    ours (or root's), or when another user could replace it: its directory is writable by
    others and not sticky-and-owned by us or root. True when it may be trusted."""
    uid = os.getuid()
    try:
        st = os.lstat(socket_path)
    except FileNotFoundError:
        return False
    except NotADirectoryError:
        return False

    def refuse(why: str) -> UntrustedSocketError:
        return UntrustedSocketError(
            "UNAVAILABLE", f"refusing the sessiondb socket {socket_path}: {why}; "
            "start a daemon of your own with `sessiondb serve --db PATH`",
        )

    if not stat.S_ISSOCK(st.st_mode):
        raise refuse("it is not a socket")
    if st.st_uid not in (uid, 0):
        raise refuse(f"it is owned by uid {st.st_uid}, not by this user (uid {uid}) or root")
    directory = os.path.dirname(os.path.abspath(socket_path))
    dst = os.stat(directory)
    others_write = dst.st_mode & 0o002 or (dst.st_mode & 0o020 and dst.st_gid != os.getgid())
    if others_write and not (dst.st_mode & stat.S_ISVTX and dst.st_uid in (uid, 0)):
        raise refuse(f"its directory {directory} is writable by other users and not sticky")
    return True

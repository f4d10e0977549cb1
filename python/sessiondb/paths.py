"""Where the database and its daemon's socket are (SPEC 2 and 5), computed exactly as the
TypeScript side does (src/socket-path.ts), and whether a socket may be trusted."""
from __future__ import annotations

import os
import stat
from typing import List, Mapping, Optional

from .errors import InvalidArgumentError, UntrustedSocketError
from .home import hermes_home, refuse_tilde
from .pg_url import is_postgres_url, pg_identity

# Unix socket paths must fit in sockaddr_un (108 bytes with the terminating NUL).
MAX_SOCKET_PATH_BYTES = 107


def default_database_path(env: Optional[Mapping[str, str]] = None) -> str:
    """``$SESSIONDB_PATH`` (a file, or a PostgreSQL URL as it is), else ``$HERMES_HOME/state.db``,
    else ``~/.hermes/state.db``, Hermes' home found as upstream's ``get_hermes_home()`` finds it
    (home.py). A leading ``~`` in either variable is refused: neither is ever expanded."""
    env = os.environ if env is None else env
    if is_postgres_url(env.get("SESSIONDB_PATH")):
        return env["SESSIONDB_PATH"]
    if env.get("SESSIONDB_PATH"):
        refuse_tilde("SESSIONDB_PATH", env["SESSIONDB_PATH"])
        return os.path.abspath(env["SESSIONDB_PATH"])
    return os.path.normpath(os.path.join(hermes_home(env), "state.db"))


def real_database_path(path: "os.PathLike[str] | str") -> str:
    """The file's real path (links resolved), also for a file that does not exist yet; a
    PostgreSQL URL as it is. A ``~`` is a name like any other, as the reference takes its path."""
    location = os.fspath(path)
    if is_postgres_url(location):
        return location
    absolute = os.path.abspath(location)
    if os.path.exists(absolute):
        return os.path.realpath(absolute)
    parent = os.path.dirname(absolute)
    if os.path.exists(parent):
        return os.path.join(os.path.realpath(parent), os.path.basename(absolute))
    return absolute


def database_identity(location: str) -> str:
    """What a daemon says it serves and a client checks: a file's real path, or a PostgreSQL
    database's identity (never its password)."""
    return pg_identity(location) if is_postgres_url(location) else real_database_path(location)


def check_regular_file(path: str) -> None:
    """Raises INVALID_ARGUMENT when ``path`` (a file's real path) names something other than a
    regular file: a FIFO, a device (/dev/null), a socket or a directory is no database, and
    autostart would create its lock and log beside it. The same words as the TypeScript side."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return  # missing (a daemon creates it) or unreadable (the daemon says why)
    if stat.S_ISREG(mode):
        return
    kind = ("a directory" if stat.S_ISDIR(mode) else "a FIFO (named pipe)" if stat.S_ISFIFO(mode)
            else "a character device" if stat.S_ISCHR(mode) else "a block device" if stat.S_ISBLK(mode)
            else "a socket" if stat.S_ISSOCK(mode) else "not a regular file")
    fix = (f"give the file, e.g. {os.path.join(path, 'state.db')}" if stat.S_ISDIR(mode)
           else "give the path of a database file (a missing one is created), or a postgres:// URL")
    raise InvalidArgumentError(
        "INVALID_ARGUMENT", f"{path} is {kind}, not a database file: sessiondb opens only regular files; {fix}")


def _login_name(uid: int) -> str:
    try:
        import pwd

        return pwd.getpwuid(uid).pw_name
    except (ImportError, KeyError):
        return str(uid)


def _user(uid: int) -> str:
    """``uid N (name)``, as the TypeScript side names a user."""
    name = _login_name(uid)
    return f"uid {uid}" if name == str(uid) else f"uid {uid} ({name})"


def write_refusal(path: str) -> Optional[str]:
    """Why no daemon of this user may serve the file at ``path`` (its real path), or None: it,
    or its -wal, -shm or -journal, belongs to another user, is writable by group or others, or
    (a side file) is a link. The daemon's own rule and words (sqlite/file-ownership.ts), said
    before autostart starts a daemon that would refuse."""
    me = os.geteuid()
    for name in (path, f"{path}-wal", f"{path}-shm", f"{path}-journal"):
        try:
            st = os.lstat(name)
        except OSError:
            continue
        mode = f"0{st.st_mode & 0o777:03o}"
        if stat.S_ISLNK(st.st_mode):
            return f"{name} is a symbolic link: SQLite would write wherever it points; remove it"
        if not stat.S_ISREG(st.st_mode):
            return f"{name} is not a regular file; remove it"
        if st.st_uid != me:
            return (f"{name} belongs to {_user(st.st_uid)} (mode {mode}), not to this user ({_user(me)}): sessiondb never "
                    f"initialises or writes another user's database; run sessiondb as that user, or, if the file is yours "
                    f"to take, chown {_login_name(me)} {name} and chmod 600 {name}; it can still be read (direct mode opens it read-only)")
        if st.st_mode & 0o022:
            who = "every user" if st.st_mode & 0o002 else "its group"
            return (f"{name} is writable by {who} (mode {mode}): others could change the conversations under you, so "
                    f"sessiondb does not write it; chmod 600 {name} to use it; it can still be read (direct mode opens it read-only)")
    return None


def private_runtime_dir(env: Optional[Mapping[str, str]] = None) -> str:
    """``$XDG_RUNTIME_DIR/sessiondb``, else ``/tmp/sessiondb-<uid>`` (the daemon creates it)."""
    env = os.environ if env is None else env
    if env.get("XDG_RUNTIME_DIR"):
        return os.path.join(env["XDG_RUNTIME_DIR"], "sessiondb")
    return os.path.join("/tmp", f"sessiondb-{os.getuid()}")


def default_socket_path(database_path: "os.PathLike[str] | str", env: Optional[Mapping[str, str]] = None) -> str:
    """``<real db path>.sock`` when it fits, else a hash-named file in the private runtime dir;
    for a PostgreSQL URL always the latter, named by the hash of its identity (no password)."""
    real = real_database_path(database_path)
    if is_postgres_url(real):
        return os.path.join(private_runtime_dir(env), _hash_name(pg_identity(real, env)) + ".sock")
    beside = f"{real}.sock"
    if len(os.fsencode(beside)) <= MAX_SOCKET_PATH_BYTES:
        return beside
    return os.path.join(private_runtime_dir(env), _hash_name(real) + ".sock")


def _hash_name(text: str) -> str:
    import hashlib  # only for a path too long for its socket beside it, or a URL

    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:32]


def identity_socket_path(database: str, env: Optional[Mapping[str, str]] = None) -> Optional[str]:
    """The socket a daemon also listens on under its file's identity,
    ``<runtime dir>/inode-<st_dev>-<st_ino>.sock``, so that a client opening the file by another
    name (a hard link) finds it. None when the file does not exist."""
    try:
        st = os.stat(database)
    except OSError:
        return None
    return os.path.join(private_runtime_dir(env), f"inode-{st.st_dev}-{st.st_ino}.sock")


def identity_lock_path(database: str, env: Optional[Mapping[str, str]] = None) -> Optional[str]:
    """``<runtime dir>/inode-<st_dev>-<st_ino>.daemon-lock``: where earlier versions of the daemon
    kept a lock under the file's identity (now the guard on the file itself, file_guard.py); only
    ever removed when stale. None when the file does not exist."""
    socket = identity_socket_path(database, env)
    return None if socket is None else socket[: -len(".sock")] + ".daemon-lock"


def candidate_sockets(database: str, socket_path: str, explicit: bool) -> List[str]:
    """Where to look for the database's daemon, in order (README "Finding the daemon"): an
    explicit socket, or a PostgreSQL database's socket, alone; else the derived one, then the
    file's identity socket."""
    if explicit or is_postgres_url(database):  # a PostgreSQL database has no file identity
        return [socket_path]
    identity = identity_socket_path(database)
    return [socket_path] if identity is None else [socket_path, identity]


def same_file(a: str, b: str) -> bool:
    """Whether two paths name one file (the same device and inode)."""
    try:
        sa, sb = os.stat(a), os.stat(b)
    except OSError:
        return False
    return (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)


# Where a directory opened by this process can be named without looking its path up again.
FD_DIR = "/proc/self/fd"


class TrustedSocket:
    """A socket that passed the trust check, named through its checked directory's open
    descriptor (``connect_path``), so a directory swapped since cannot redirect the connect.
    ``close()`` (after connecting) closes that descriptor."""

    def __init__(self, connect_path: str, fd: int) -> None:
        self.connect_path = connect_path
        self._fd = fd

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def check_socket_trust(socket_path: str) -> Optional[TrustedSocket]:
    """None when nothing is at the path. Raises UntrustedSocketError when it is not a socket,
    when the socket or its directory is not ours (or root's), or when another user could replace
    it: its directory is writable by group or others and not sticky. The checks are made on the
    opened directory (``fstat``, then ``lstat`` through ``/proc/self/fd/<fd>/<name>``), not on
    a second lookup of its path."""
    uid = os.getuid()
    directory = os.path.dirname(os.path.abspath(socket_path))
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return None

    def refuse(why: str) -> UntrustedSocketError:
        return UntrustedSocketError(
            "UNAVAILABLE", f"refusing the sessiondb socket {socket_path}: {why}; "
            "start a daemon of your own with `sessiondb serve --db PATH`",
        )

    try:
        dst = os.fstat(fd)
        if dst.st_uid not in (uid, 0):
            raise refuse(f"its directory {directory} is owned by uid {dst.st_uid}, not by this user (uid {uid}) or root")
        via_fd = os.path.join(FD_DIR, str(fd), os.path.basename(socket_path)) if os.path.isdir(FD_DIR) else socket_path
        try:
            st = os.lstat(via_fd)
        except (FileNotFoundError, NotADirectoryError):
            os.close(fd)
            return None
        if not stat.S_ISSOCK(st.st_mode):
            raise refuse("it is not a socket")
        if st.st_uid not in (uid, 0):
            raise refuse(f"it is owned by uid {st.st_uid}, not by this user (uid {uid}) or root")
        if dst.st_mode & 0o022 and not dst.st_mode & stat.S_ISVTX:
            raise refuse(f"its directory {directory} is writable by other users and not sticky")
    except BaseException:
        os.close(fd)
        raise
    connect_path = via_fd if len(os.fsencode(via_fd)) <= MAX_SOCKET_PATH_BYTES else socket_path
    return TrustedSocket(connect_path, fd)

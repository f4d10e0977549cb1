"""Whether a daemon holds a database file, by whatever name (README "One daemon per file"): every
daemon holds an exclusive ``flock(2)`` on the database file itself for its whole life
(src/file-guard.ts). A lock on the file's inode cannot be deleted from outside, unlike the
sockets and lock files in the runtime folder, and the kernel drops it when the daemon dies. So a
client that finds no socket answering still knows a daemon holds the file, and neither starts a
second one nor writes beside it; and lock files that no live daemon holds are removed."""
from __future__ import annotations

import fcntl
import os
import stat
import threading
from typing import Dict, Tuple

# Descriptors of database files opened here to test the guard, by (st_dev, st_ino). Never closed:
# closing any descriptor of a file drops every POSIX lock this process holds on it, those of a
# sqlite3 connection to the same file in this process included.
_descriptors: Dict[Tuple[int, int], int] = {}
_descriptors_lock = threading.Lock()


def daemon_holds(path: str) -> bool:
    """True when a daemon holds the file at ``path``; False when none does or there is no such
    regular file. The test takes a shared flock for an instant (a daemon starting at that very
    moment waits for it)."""
    try:
        st = os.stat(path)
    except OSError:
        return False
    if not stat.S_ISREG(st.st_mode):
        return False
    with _descriptors_lock:
        fd = _descriptors.get((st.st_dev, st.st_ino))
        if fd is None:
            try:
                fd = os.open(path, os.O_RDONLY | os.O_NOCTTY | os.O_NONBLOCK | os.O_CLOEXEC)
            except OSError:
                return False
            opened = os.fstat(fd)
            _descriptors[(opened.st_dev, opened.st_ino)] = fd
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        except OSError:
            return False
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False


def remove_stale_lock(path: str) -> bool:
    """Removes the daemon lock file at ``path`` (``<db>.daemon-lock``, or an
    ``inode-<dev>-<ino>.daemon-lock`` an earlier version left in the runtime folder) and its
    ``-journal`` when no live daemon holds it: its exclusive SQLite lock can be taken. Only a plain
    file of this user; it is removed while that lock is held, so a daemon starting at the same
    instant holds it first (and it stays) or makes a new one."""
    journal = f"{path}-journal"
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        _remove_orphan(journal)
        return False
    except OSError:
        return False
    if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1 or st.st_uid != os.getuid():
        return False
    import sqlite3  # only here: most processes never need it

    try:
        connection = sqlite3.connect(path, timeout=0, isolation_level=None)
    except sqlite3.Error:
        return False
    try:
        connection.execute("BEGIN EXCLUSIVE")
        now = os.lstat(path)
        if (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
            return False
        os.unlink(path)
        _remove_orphan(journal)
        return True
    except (sqlite3.Error, OSError):
        return False  # held: a live daemon's
    finally:
        connection.close()


def _remove_orphan(journal: str) -> None:
    try:
        st = os.lstat(journal)
        if stat.S_ISREG(st.st_mode) and st.st_uid == os.getuid():
            os.unlink(journal)
    except OSError:
        pass

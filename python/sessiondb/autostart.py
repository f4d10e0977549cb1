"""Starting a daemon on demand (``autostart``): ``sessiondb serve --db PATH --idle-exit 30``,
detached from the caller, one at a time per socket (a file lock beside the socket, removed once
used), then waiting up to 5 s for its hello. ``SESSIONDB_AUTOSTART=0`` (or ``false``) turns it
off, whatever the caller asked."""
from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import threading
import time
from typing import Callable, Dict, List, Optional

from .errors import UnavailableError
from .protocol import unavailable_message

# How long a started daemon has to answer its first hello.
START_WAIT_S = 5.0
# How long a process waits for another one that is starting the daemon (which itself waits up
# to START_WAIT_S): a little more, so a racing process never gives up before the starter does.
LOCK_WAIT_S = START_WAIT_S + 3.0
# How long an autostarted daemon lingers with no client connected (``serve --idle-exit``), by
# default: a test suite's daemons, one per temporary database, must not pile up.
IDLE_EXIT_S = 30.0
POLL_S = 0.05


def autostart_disabled() -> bool:
    """``SESSIONDB_AUTOSTART`` says 0, false, no or off: no client starts a daemon (test suites, CI)."""
    return os.environ.get("SESSIONDB_AUTOSTART", "").strip().lower() in ("0", "false", "no", "off")


def idle_exit_arg(seconds: float) -> str:
    """``--idle-exit``'s value: a plain decimal (``serve`` takes no exponent), at least 1 ms."""
    return f"{max(float(seconds), 0.001):.3f}".rstrip("0").rstrip(".")


def daemon_command() -> Optional[List[str]]:
    """``$SESSIONDB_BIN``, else ``sessiondb`` on PATH, else None."""
    explicit = os.environ.get("SESSIONDB_BIN")
    if explicit:
        return [explicit]
    found = shutil.which("sessiondb")
    return [found] if found else None


def side_file(socket_path: str, suffix: str) -> str:
    """A file beside the socket: ``state.db.sock`` gives ``state.db.<suffix>``."""
    stem = socket_path[:-5] if socket_path.endswith(".sock") else socket_path
    return f"{stem}.{suffix}"


def start_daemon(database: str, socket_path: str, explicit_socket: bool,
                 answers: Callable[[], bool], env: Optional[Dict[str, str]] = None,
                 serve_db: Optional[str] = None, idle_exit: float = IDLE_EXIT_S,
                 on_spawn: Optional[Callable[[], None]] = None) -> None:
    """Makes sure a daemon answers on the socket, starting one when none does. ``answers`` is a
    probe that connects and says hello; ``env`` the daemon's environment, when not this one's
    (a PostgreSQL password as ``PGPASSWORD``, never on its command line); ``serve_db`` its
    ``--db`` when not ``database`` (a URL with its connection settings, without its secrets);
    ``idle_exit`` the seconds the daemon lingers with no client (``serve --idle-exit``);
    ``on_spawn`` is called once the daemon's process exists (a caller that goes on without waiting
    for its hello lets its own process end no sooner). Raises UnavailableError when no daemon
    could be had."""
    command = daemon_command()
    if command is None:
        raise UnavailableError("UNAVAILABLE", unavailable_message(
            socket_path, database, "autostart found no daemon to start: set $SESSIONDB_BIN or put "
            "`sessiondb` on PATH"))
    directory = os.path.dirname(socket_path)
    os.makedirs(directory, mode=0o700, exist_ok=True)
    lock_path = side_file(socket_path, "autostart-lock")
    lock_fd = _take_start_lock(lock_path, socket_path, database)
    try:
        # Whoever held the lock before us may have started one already.
        if answers():
            return
        _spawn_and_wait(command, database, serve_db or database, socket_path, explicit_socket, answers, env, idle_exit,
                        on_spawn)
    finally:
        _remove_if_ours(lock_path, lock_fd)
        os.close(lock_fd)


def _take_start_lock(lock_path: str, socket_path: str, database: str) -> int:
    """The exclusive flock on the autostart lock file still at ``lock_path``: it is removed by the
    process that lets go of it, so one won on a file removed meanwhile is taken again."""
    give_up = time.monotonic() + LOCK_WAIT_S
    while True:
        lock_fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            while True:
                try:
                    fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > give_up:
                        raise UnavailableError("UNAVAILABLE", unavailable_message(
                            socket_path, database, "another process has been starting a daemon for too long")) from None
                    time.sleep(POLL_S)
            if _is_at(lock_path, lock_fd):
                return lock_fd
        except BaseException:
            os.close(lock_fd)
            raise
        os.close(lock_fd)


def _is_at(path: str, fd: int) -> bool:
    try:
        at, held = os.stat(path), os.fstat(fd)
    except OSError:
        return False
    return (at.st_dev, at.st_ino) == (held.st_dev, held.st_ino)


def _remove_if_ours(path: str, fd: int) -> None:
    """The autostart lock file is removed (while still locked) once used: none is left behind."""
    if _is_at(path, fd):
        try:
            os.unlink(path)
        except OSError:
            pass


def _spawn_and_wait(command: List[str], database: str, serve_db: str, socket_path: str,
                    explicit_socket: bool, answers: Callable[[], bool], env: Optional[Dict[str, str]],
                    idle_exit: float, on_spawn: Optional[Callable[[], None]] = None) -> None:
    args = command + ["serve", "--db", serve_db, "--idle-exit", idle_exit_arg(idle_exit)]
    if explicit_socket:
        args += ["--socket", socket_path]
    log_path = side_file(socket_path, "daemon.log")
    log_fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        process = subprocess.Popen(
            args, stdin=subprocess.DEVNULL, stdout=log_fd, stderr=log_fd,
            start_new_session=True, close_fds=True, env=env,
        )
    except OSError as err:
        raise UnavailableError("UNAVAILABLE", unavailable_message(
            socket_path, database, f"autostart could not run {command[0]}: {err}")) from None
    finally:
        os.close(log_fd)
    if on_spawn is not None:
        on_spawn()
    # Reaps the daemon when it exits while this process still runs (no zombie).
    threading.Thread(target=process.wait, name="sessiondb-daemon-reaper", daemon=True).start()
    give_up = time.monotonic() + START_WAIT_S
    while time.monotonic() < give_up:
        if answers():
            return
        if process.poll() is not None:
            if answers():  # it lost the race to another daemon, which answers now
                return
            raise UnavailableError("UNAVAILABLE", unavailable_message(
                socket_path, database,
                f"the daemon autostart started exited with status {process.returncode}; see {log_path}"))
        time.sleep(POLL_S)
    raise UnavailableError("UNAVAILABLE", unavailable_message(
        socket_path, database, f"the daemon autostart started did not answer within {START_WAIT_S:g} s; see {log_path}"))

"""``SessionDB``: the drop-in for the reference ``hermes_state.SessionDB``, served by the daemon."""
from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Union

from . import forks
from .autostart import IDLE_EXIT_S, autostart_disabled, daemon_command, start_daemon
from .bridge import Bridge, Daemon
from .connection import Connection, Lost, NoDaemon
from .errors import (
    ClosedError, FilePermissionError, InvalidArgumentError, SessionDBError, UnavailableError, UntrustedSocketError,
)
from .file_connection import FileConnection
from .idempotency import Resends, write_key
from .spool import REFUSED_CODES, SPOOLED_CODES, open_spool, replay_args, spool_write
from .operations import Operations
from .file_guard import daemon_holds, remove_stale_lock
from .immediate_write import write_immediately
from .paths import (
    candidate_sockets, check_regular_file, database_identity, default_database_path, default_socket_path,
    identity_lock_path, write_refusal,
)
from .pg_url import is_postgres_url, pg_password_env, url_without_secrets
from .protocol import optional, unavailable_message
from .protocol_description import CONTROL, KEYED_OPS, OPERATION_KINDS, READ, WRITE
from .watch import DaemonWatch, FileWatch, Watch, Watches, watch_args

PathLike = Union[str, "os.PathLike[str]"]
# A request whose connection died before it reached the daemon is re-sent; this bounds how often.
MAX_ATTEMPTS = 3
# How long a client waits for a daemon that holds the file but answers on none of its sockets
# (removed with the runtime folder: the daemon makes them again at once; or it is starting or
# stopping). A bound, not a timing.
HOLDER_WAIT_S = 15.0
HOLDER_POLL_S = 0.05


class Misses:
    """Why no candidate socket counted: another user's socket (UntrustedSocketError) is said
    rather than "no daemon"; else the last candidate's reason, as NoDaemon."""

    def __init__(self) -> None:
        self._refused: Optional[UntrustedSocketError] = None
        self._why = "no socket file"

    def add(self, err: Exception) -> None:
        if isinstance(err, UntrustedSocketError):
            self._refused = self._refused or err
        else:  # NoDaemon, or a daemon serving another file (UNAVAILABLE)
            self._why = str(err)

    def error(self) -> Exception:
        return self._refused if self._refused is not None else NoDaemon(self._why)


class Target:
    """Where a client's daemon is, resolved once: the database (a file's real path, or a
    PostgreSQL database's identity) and the socket."""

    def __init__(self, db_path: Optional[PathLike], socket_path: Optional[PathLike],
                 timeout: float, autostart: bool, autostart_idle_exit: float = IDLE_EXIT_S) -> None:
        for name, value in (("timeout", timeout), ("autostart_idle_exit", autostart_idle_exit)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0 or value == float("inf"):
                raise InvalidArgumentError("INVALID_ARGUMENT", f"{name} must be a positive number of seconds, got {value!r}")
        location = os.fspath(db_path) if db_path is not None else default_database_path()
        # A URL stays a string (a Path would fold its "//"); the daemon names it by its identity,
        # so that is what its hello is checked against.
        self._url = location if is_postgres_url(location) else None
        self.db_path: Union[str, Path] = location if self._url else Path(location)
        self.database = database_identity(location)
        if self._url is None:
            check_regular_file(self.database)
        self.explicit_socket = socket_path is not None
        self.socket_path = os.path.abspath(os.fspath(socket_path)) if socket_path is not None else default_socket_path(location)
        self.timeout = float(timeout)
        # $SESSIONDB_AUTOSTART=0 wins over the code: a test suite or CI job turns it off for every client.
        self.autostart = bool(autostart) and not autostart_disabled()
        self.autostart_idle_exit = float(autostart_idle_exit)

    def autostart_off(self) -> str:
        return "autostart is off (SESSIONDB_AUTOSTART)" if autostart_disabled() else "autostart is off"

    def no_daemon(self, why: str) -> UnavailableError:
        return UnavailableError("UNAVAILABLE", unavailable_message(self.socket_path, self.database, why))

    def lost_write(self, op: str) -> UnavailableError:
        return UnavailableError(
            "UNAVAILABLE",
            f"the connection to the daemon on {self.socket_path} was lost while it held {op}: "
            "it may or may not have been applied",
        )

    def candidates(self) -> List[str]:
        """The sockets to try, in order: the derived one, then the file's identity socket, where
        a daemon serving the file under another name (a hard link) also listens; an explicit
        socket alone. Looked up at each connect: the file may appear, or be replaced."""
        return candidate_sockets(self.database, self.socket_path, self.explicit_socket)

    def open_first(self, deadline: float) -> Connection:
        """The first candidate's daemon that is this user's (or root's) and serves this very file.
        Raises NoDaemon when none answers, UntrustedSocketError when none answers and one of them
        was another user's (or could be swapped by one)."""
        misses = Misses()
        for candidate in self.candidates():
            try:
                return Connection.open(candidate, self.database, deadline)
            except (NoDaemon, UnavailableError) as err:
                misses.add(err)
        raise misses.error()

    def closed_before(self, op: str) -> UnavailableError:
        return UnavailableError(
            "UNAVAILABLE",
            f"the daemon on {self.socket_path} closed the idle connection before reading {op}: "
            "it was not applied; call again (the next call reconnects)",
        )

    def answers(self) -> bool:
        """A probe for autostart: does a daemon say hello on the socket now?"""
        try:
            self.open_first(time.monotonic() + 1.0).close()
            return True
        except NoDaemon:
            return False

    def wait_for_holder(self, deadline: float) -> bool:
        """When no socket answered: True once the daemon that holds the file (file_guard.py)
        answers again; False when no daemon holds it (and then its dead daemon's stale lock files
        are removed). Raises UnavailableError when one holds it but does not answer in time: no
        second daemon is started beside it. An explicit socket is the only candidate: not waited
        for (a daemon started on it would be refused by the guard all the same)."""
        if self._url is not None or self.explicit_socket:
            return False
        give_up = min(deadline, time.monotonic() + HOLDER_WAIT_S)
        while daemon_holds(self.database):
            if time.monotonic() > give_up:
                raise UnavailableError(
                    "UNAVAILABLE",
                    f"a sessiondb daemon holds {self.database} (by this or another name: its lock on the file "
                    f"itself) but answers on none of its sockets ({', '.join(self.candidates())}); no second "
                    "daemon is started beside it: retry once it answers, or stop it")
            time.sleep(HOLDER_POLL_S)
            if self.answers():
                return True
        for lock in (f"{self.database}.daemon-lock", identity_lock_path(self.database)):
            if lock is not None:
                remove_stale_lock(lock)
        return False

    def start_daemon(self, on_spawn: Optional[Any] = None) -> None:
        """Autostart (blocking): a daemon for this database, unless one answers by then."""
        refusal = None if self._url else write_refusal(self.database)
        if refusal is not None:  # no daemon serves it: say why rather than start one that refuses
            raise FilePermissionError("PERMISSION", refusal)
        # A URL goes on the daemon's command line without its secrets, its password in the environment.
        env = pg_password_env(self._url) if self._url else None
        serve_db = url_without_secrets(self._url) if self._url else None
        start_daemon(self.database, self.socket_path, self.explicit_socket, self.answers, env, serve_db,
                     self.autostart_idle_exit, on_spawn)

    def connect(self, deadline: float) -> Connection:
        """A connection to the file's daemon, starting one when allowed and none answers. Raises
        UnavailableError (or another SessionDBError) when there is none, never NoDaemon."""
        try:
            return self.open_first(deadline)
        except NoDaemon as err:
            if self.wait_for_holder(deadline):
                # The holder answered a probe, and may be gone again (killed, restarting): that is
                # UNAVAILABLE, which a keyed write sends again until its deadline, never NoDaemon.
                try:
                    return self.open_first(max(deadline, time.monotonic() + 1.0))
                except NoDaemon as again:
                    raise self.no_daemon(f"{again}, after the daemon holding the file answered") from None
            if not self.autostart:
                raise self.no_daemon(f"{err}; {self.autostart_off()}") from None
        self.start_daemon()
        try:
            return self.open_first(max(deadline, time.monotonic() + 1.0))
        except NoDaemon as err:
            raise self.no_daemon(f"{err} after autostart") from None


class Attempts:
    """The reconnect rule of one call: a request whose connection died before it reached the
    daemon is sent again; a read in flight is retried once; a write in flight is never re-sent
    (it may have been applied) and fails UNAVAILABLE. After the daemon's goodbye frame (an idle
    connection closed) a read is sent again on a new connection, a write fails UNAVAILABLE
    saying it was not applied."""

    def __init__(self, target: Target, op: str, kind: str) -> None:
        self.deadline = time.monotonic() + target.timeout
        self._target = target
        self._op = op
        self._kind = kind
        self._read_retried = False

    def __iter__(self) -> Iterator[int]:
        return iter(range(MAX_ATTEMPTS))

    def lost(self, lost: Lost) -> None:
        """Raises unless the call may be sent again."""
        if lost.goodbye:
            # The daemon closed the idle connection and read nothing after its goodbye: the
            # request was not applied. A read is sent again on a new connection; a write is
            # never re-sent by the client (the caller decides).
            if self._kind != READ:
                raise self._target.closed_before(self._op) from None
            return
        if not lost.sent:
            return
        if self._kind != READ:
            raise self._target.lost_write(self._op) from None
        if self._read_retried:
            raise self._target.no_daemon(f"the connection was lost twice during {self._op}") from None
        self._read_retried = True

    def exhausted(self) -> UnavailableError:
        return self._target.no_daemon(f"the connection kept failing during {self._op}")


_NOT_BRIDGED = object()

class SessionDB(Operations):
    """The session store of a Hermes agent, served by the sessiondb daemon. Thread-safe: every
    thread may call at once; the calls share one pipelined connection. Fork-safe: a child
    process that goes on using the handle connects anew (the parent's connection stays the
    parent's)."""

    def __init__(self, db_path: Optional[PathLike] = None, *, socket_path: Optional[PathLike] = None,
                 timeout: float = 30.0, autostart: bool = True,
                 autostart_idle_exit: float = IDLE_EXIT_S, spool: Union[bool, Dict[str, Any]] = False) -> None:
        self._target = Target(db_path, socket_path, timeout, autostart, autostart_idle_exit)
        self._spool = open_spool(spool, self._target.database)
        self.db_path = self._target.db_path
        # The reference's lock, for callers that hold it around ``_conn`` (upstream's ACP
        # adapter); this class's own state has a lock of its own, so holding it blocks no call.
        self._lock = threading.Lock()
        self._state_lock = threading.Lock()
        self._file = FileConnection(self._target.database, self._target.timeout)
        self._connection: Optional[Connection] = None
        self._closed = False
        # While no daemon answers yet: the file itself, until the daemon started in the background
        # does (bridge.py). Its lock orders the calls around the move.
        self._bridge: Optional[Bridge] = None
        self._bridge_lock = threading.Lock()
        self._watches = Watches()
        forks.track(self)
        deadline = time.monotonic() + self._target.timeout
        if not self._start_bridged(deadline):
            self._connected(deadline)
        if self._spool is not None and self._spool.pending():
            try:
                self.replay_spool()
            except SessionDBError as err:
                if err.code not in SPOOLED_CODES:
                    raise  # else: still unreachable; the next write replays first

    def _start_bridged(self, deadline: float) -> bool:
        """Connects to the daemon when one answers (True); else, when autostart may start one for a
        usable SQLite file, starts it in the background and serves the first calls from the file
        (True); False when neither applies (the usual connect, which may start one and wait)."""
        target = self._target
        if target._url is not None or not target.autostart or daemon_command() is None:
            return False
        try:
            connection = target.open_first(deadline)
        except NoDaemon:
            # A daemon that holds the file (starting, or its sockets removed) is waited for.
            if not target.wait_for_holder(deadline):
                self._bridge = Bridge.open(target.database, target.start_daemon)
                return self._bridge is not None
            connection = target.open_first(max(deadline, time.monotonic() + 1.0))
        with self._state_lock:
            self._connection = connection
        return True

    def _bridged(self, op: str, args: List[Any], deadline: float, key: Optional[str] = None) -> Any:
        """The call served from the file while the daemon starts; ``_NOT_BRIDGED`` once the handle
        has moved to the daemon (here, between two calls: every call made before has returned)."""
        with self._bridge_lock:
            bridge = self._bridge
            if bridge is None:
                return _NOT_BRIDGED
            if self._closed:
                raise ClosedError("CLOSED", "this SessionDB is closed")
            if not bridge.daemon_ready:
                try:
                    return bridge.run(op, args, key)
                except Daemon:
                    pass  # a call for the daemon: wait for it
            self._bridge = None
            bridge.close()
            bridge.wait(deadline)  # the start's error, if it failed: the next call starts anew
        return _NOT_BRIDGED

    @property
    def socket_path(self) -> str:
        return self._target.socket_path

    @property
    def _conn(self) -> Any:
        """The reference's private ``sqlite3.Connection`` to the file, opened on first use (see
        file_connection.py); None after ``close()``, as the reference's."""
        if self._closed:
            return None
        return self._file.get(self._served_name)

    def _served_name(self) -> str:
        """The name the daemon serves the file by (its hello), for ``_conn``: never another
        name of the same file, which would be a second WAL beside the daemon's."""
        try:
            hello = self._connected(time.monotonic() + self._target.timeout).hello
        except UnavailableError:
            if daemon_holds(self._target.database):
                raise
            return self._target.database  # no daemon at all: the file by its own name
        return hello.get("database") or self._target.database

    # The reference's write helper, for code that calls it past the public API: ``fn(conn)``
    # inside BEGIN IMMEDIATE on ``_conn``, retried with 20-150 ms of jitter while the file is
    # locked, 15 attempts, under ``_lock``.
    def _execute_write(self, fn: Any) -> Any:
        return write_immediately(self._file.get(self._served_name), fn, self._lock)

    def _forget_after_fork(self) -> None:
        """In a forked child (os.register_at_fork): the inherited socket is the parent's
        connection; its reader thread did not survive the fork, and a request sent on it would
        interleave with the parent's. The child closes its copy of the descriptor (no shutdown,
        which would end the parent's connection too) and connects anew at its next call."""
        self._lock = threading.Lock()
        self._state_lock = threading.Lock()
        connection, self._connection = self._connection, None
        if connection is not None:
            connection.abandon_after_fork()
        self._file.forget_after_fork()
        self._bridge_lock = threading.Lock()
        bridge, self._bridge = self._bridge, None
        if bridge is not None:
            bridge.abandon_after_fork()

    def _result(self, value: Any) -> Any:
        """A result the reference gives without a matching row: no round trip."""
        if self._closed:
            raise ClosedError("CLOSED", "this SessionDB is closed")
        return value

    def _then(self, done: Any, value: Any) -> Any:
        return value

    def _connected(self, deadline: float) -> Connection:
        with self._state_lock:
            if self._closed:
                raise ClosedError("CLOSED", "this SessionDB is closed")
            if self._connection is None or self._connection.lost:
                if self._connection is not None:
                    self._connection.close()
                self._connection = self._target.connect(deadline)
            return self._connection

    def _call(self, op: str, args: List[Any], key: Optional[str] = None) -> Any:
        """One call of ``op``: its kind (read, write with its key, control) is protocol.json's."""
        kind = OPERATION_KINDS.get(op, CONTROL)
        attempts = Attempts(self._target, op, kind)
        keyed = op in KEYED_OPS
        if keyed:
            key = write_key(key)
        if self._bridge is not None:
            result = self._bridged(op, args, attempts.deadline, key if keyed else None)
            if result is not _NOT_BRIDGED:
                return result
        if keyed and self._spool is not None:
            return self._spooled_write(op, args, key, attempts.deadline)
        if keyed:
            return self._keyed_write(op, args, key, attempts.deadline)
        for _ in attempts:
            try:
                return self._connected(attempts.deadline).request(op, kind, args, attempts.deadline)
            except Lost as lost:
                attempts.lost(lost)
        raise attempts.exhausted()

    def _keyed_write(self, op: str, args: List[Any], key: str, deadline: float) -> Any:
        """A write with its key, sent again until its deadline while its fate is unknown
        (idempotency.py): applied once however often it is sent."""
        resends = Resends(op, deadline)
        while True:
            try:
                return self._connected(deadline).request(op, WRITE, args, deadline, key=key)
            except Lost as lost:
                resends.sent = resends.sent or lost.sent
                err: BaseException = self._target.lost_write(op) if lost.sent else self._target.no_daemon(
                    f"the connection was lost before {op} was sent")
            except SessionDBError as failed:
                resends.sent = resends.sent or failed.code == "OUTCOME_UNKNOWN"
                err = failed
            time.sleep(resends.again(err))

    def _spooled_write(self, op: str, args: List[Any], key: str, deadline: float) -> Any:
        """With the spool on: what the spool holds goes first (the caller's order); a write that
        cannot be applied before its deadline is spooled, with the time it was made, and raises SpooledError."""
        made = time.time()
        try:
            if self._spool.pending():
                self.replay_spool(deadline)
            return self._keyed_write(op, args, key, deadline)
        except SessionDBError as err:
            if err.code not in SPOOLED_CODES:
                raise
            raise spool_write(self._spool, err, key, op, args, made) from err

    def replay_spool(self, deadline: Optional[float] = None) -> int:
        """Applies this database's spooled writes, in order, each once (by its key); returns how
        many. Raises the error of the first that cannot be applied yet (it stays spooled)."""
        if self._spool is None:
            return 0
        deadline = deadline if deadline is not None else time.monotonic() + self._target.timeout
        applied = 0
        for record in self._spool.pending():
            try:
                self._keyed_write(record["op"], replay_args(record), record["key"], deadline)
            except SessionDBError as err:
                if err.code not in REFUSED_CODES:
                    raise
                # Refused for good (a conflict, a constraint): replaying it again changes nothing.
            self._spool.acknowledge(record["key"])
            applied += 1
        return applied

    def export_all(self, source: Optional[str] = None) -> List[Dict[str, Any]]:
        """Every session (newest first, children included) with its messages, as a list."""
        return list(self.iter_export_all(source))

    def iter_export_all(self, source: Optional[str] = None) -> Iterator[Dict[str, Any]]:
        """``export_all`` streamed: sessions arrive page by page on a connection of their own,
        read only as fast as they are consumed, so memory stays constant however large the file."""
        if self._closed:
            raise ClosedError("CLOSED", "this SessionDB is closed")
        connection = self._target.connect(time.monotonic() + self._target.timeout)
        try:
            yield from connection.stream("exportAll", [optional(source=source)], self._target.timeout)
        except Lost:
            raise self._target.no_daemon("the connection was lost during exportAll") from None
        finally:
            connection.close()

    def watch(self, session_id: Optional[str] = None, source: Optional[str] = None,
              after_message_id: Optional[int] = None) -> Watch:
        """The change feed of one session, or of every session (of one ``source``): an iterator of
        event dicts in commit order, ``{"type": "message", "message": row}``, ``{"type":
        "session", "change": …, "session_id": …, "session": row or None}`` (``change`` one of
        created, ended, reopened, titled, tokens, system_prompt, cleared, deleted) and ``{"type":
        "resync", "after_message_id": n}`` (this watcher fell behind: re-read what it shows, the
        feed goes on after message ``n``). With ``after_message_id`` the messages after it are
        replayed first, then live ones follow with no gap and no duplicate; without it the feed
        starts now. Blocks in ``next()`` until an event comes; ``close()`` (from any thread), the
        generator's close or ``db.close()`` ends it. Served by the daemon on a connection of its
        own, or from the file while the handle is (cold start) or the daemon has no watch."""
        args = watch_args(session_id, source, after_message_id)
        if self._closed:
            raise ClosedError("CLOSED", "this SessionDB is closed")
        target = self._target
        if self._bridge is not None:
            return self._watches.add(FileWatch(target.database, args, self._watches.remove))
        connection = target.connect(time.monotonic() + target.timeout)
        fallback = None
        if target._url is None:
            def fallback() -> Watch:
                return self._watches.add(FileWatch(target.database, args, self._watches.remove))
        lost = lambda: target.no_daemon("the connection was lost during watch; watch again with "
                                        "after_message_id set to the last message id seen")
        try:
            return self._watches.add(DaemonWatch(connection, args, self._watches.remove, lost, fallback,
                                                 lambda: target.connect(time.monotonic() + target.timeout)))
        except Lost:
            connection.close()
            raise lost() from None

    def close(self) -> None:
        """Waits for calls in flight, then closes the connection (and ``_conn``) and ends the
        watches. Idempotent."""
        self._watches.close_all()
        with self._state_lock:
            self._closed = True
            connection, self._connection = self._connection, None
        with self._bridge_lock:
            bridge, self._bridge = self._bridge, None
        if bridge is not None:
            bridge.close()
        if connection is not None:
            connection.wait_idle()
            connection.close()
        self._file.close()
        forks.untrack(self)

    def __enter__(self) -> "SessionDB":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

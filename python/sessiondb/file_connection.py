"""``db._conn`` and ``db._lock``: what upstream Hermes code reaches for past the public API
(``agent/insights.py`` reads through ``db._conn``, ``cli.py`` clears ``ended_at`` through it on
``--resume``, ``acp_adapter/session.py`` writes under ``with db._lock: db._conn.execute(...)``).
``_conn`` is a real ``sqlite3.Connection`` to the daemon's file, opened on first use exactly as
the reference opens its own; writes through it are ordinary writes beside the daemon, which it
tolerates and its watch feed sees. A PostgreSQL database has no file: ``_conn`` says so."""
from __future__ import annotations

import sqlite3
import threading
from typing import Any, Callable, List, Optional

from .errors import NoFileConnectionError
from .pg_url import is_postgres_url, url_without_secrets

# Connections inherited by a forked child: never used or closed there (closing could checkpoint
# or unlink the parent's WAL files), only kept from being garbage-collected.
_abandoned: List[Any] = []


def open_file_connection(path: str, timeout: float) -> sqlite3.Connection:
    """The reference's connection: autocommit (``isolation_level=None``), usable from any thread,
    rows as ``sqlite3.Row``, WAL, foreign keys on. Its busy timeout is the handle's timeout (the
    reference's own writes retry on a 1 s one; a caller's raw statement has no retry)."""
    conn = sqlite3.connect(path, timeout=timeout, check_same_thread=False, isolation_level=None)
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA foreign_keys=ON")
    return conn


class FileConnection:
    """The lazily opened ``_conn`` of one handle. Its own lock guards opening, so reading
    ``db._conn`` while holding ``db._lock`` (as upstream's ACP adapter does) cannot deadlock."""

    def __init__(self, location: str, timeout: float) -> None:
        self._location = location
        self._timeout = timeout
        self._guard = threading.Lock()
        self._conn: Optional[sqlite3.Connection] = None

    def get(self, served_name: Optional[Callable[[], str]] = None) -> sqlite3.Connection:
        """The connection, opened on first use by ``served_name()`` when given: the name the
        daemon serves the file by. SQLite keeps the WAL beside each name, so a connection by
        another name of the same file (a hard link) would be a second writer and corrupt it."""
        if is_postgres_url(self._location):
            raise NoFileConnectionError(
                "UNAVAILABLE",
                f"db._conn is a sqlite3 connection to the database file, and "
                f"{url_without_secrets(self._location)} is a PostgreSQL database: code that reads "
                "or writes through the reference's private connection (hermes insights, --resume, "
                "the ACP adapter's updates) needs a SQLite state.db",
            )
        with self._guard:
            if self._conn is None:
                self._conn = open_file_connection(served_name() if served_name else self._location, self._timeout)
            return self._conn

    def close(self) -> None:
        with self._guard:
            conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    def forget_after_fork(self) -> None:
        """In a forked child: the parent's connection is left alone; the next use opens anew."""
        self._guard = threading.Lock()
        if self._conn is not None:
            _abandoned.append(self._conn)
            self._conn = None

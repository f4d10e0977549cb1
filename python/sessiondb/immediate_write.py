"""The reference's way to write the file beside other writers: ``BEGIN IMMEDIATE``, the work, then
``COMMIT`` (``ROLLBACK`` on any failure), tried again after 20-150 ms of jitter while the file is
locked, 15 attempts in all (SPEC §6). Used by ``SessionDB._execute_write`` and by the cold-start
bridge."""
from __future__ import annotations

import sqlite3
import time
from typing import Any, Callable, ContextManager, Optional

ATTEMPTS = 15
RETRY_MIN_S, RETRY_MAX_S = 0.020, 0.150


def _locked(err: sqlite3.OperationalError) -> bool:
    text = str(err).lower()
    return "locked" in text or "busy" in text


def write_immediately(conn: sqlite3.Connection, fn: Callable[[sqlite3.Connection], Any],
                      lock: Optional[ContextManager[Any]] = None) -> Any:
    """``fn(conn)`` in one write transaction, held under ``lock`` (if any) for each attempt; the
    last "database is locked" error when every attempt found the file locked."""
    last: Optional[sqlite3.OperationalError] = None
    for attempt in range(ATTEMPTS):
        try:
            if lock is not None:
                with lock:
                    return _once(conn, fn)
            return _once(conn, fn)
        except sqlite3.OperationalError as err:
            if not _locked(err) or attempt == ATTEMPTS - 1:
                raise
            last = err
            import random  # only when the file is locked

            time.sleep(random.uniform(RETRY_MIN_S, RETRY_MAX_S))
    raise last or sqlite3.OperationalError("database is locked after max retries")


def _once(conn: sqlite3.Connection, fn: Callable[[sqlite3.Connection], Any]) -> Any:
    conn.execute("BEGIN IMMEDIATE")
    try:
        result = fn(conn)
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return result

"""The watch feed read from the SQLite file itself (issue 26): what a handle serves while no daemon
answers it (cold start, bridge.py) or when the daemon it reaches has no ``watch`` op. Its own
``sqlite3`` connection polls ``PRAGMA data_version`` every 50 ms (the TypeScript direct mode's
interval); when another connection has committed, one read transaction takes the messages past
the cursor and the watched sessions' rows, and the rows' differences from the last read are the
session events. Every writer is seen: the daemon, direct mode, the reference's own sqlite3.

Within one poll the events come as commits would have ordered them: sessions created, then the
new messages by id, then the other changes, then sessions deleted."""
from __future__ import annotations

import sqlite3
import threading
from typing import Any, Dict, List, Optional, Tuple

from .bridge import MESSAGE_COLUMNS, SESSION_COLUMNS, _decoded

POLL_S = 0.05
# Messages read per statement while catching up (a long replay goes in pages).
PAGE = 500

_I = {name: i for i, name in enumerate(SESSION_COLUMNS)}
TOKEN_FIELDS = tuple(_I[c] for c in (
    "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens",
    "estimated_cost_usd", "actual_cost_usd", "cost_status", "cost_source", "pricing_version",
    "billing_provider", "billing_base_url", "billing_mode", "model"))


def session_changes(old: Optional[Tuple[Any, ...]], new: Optional[Tuple[Any, ...]]) -> List[str]:
    """What changed between two reads of one session row, in a fixed order (none for a message
    appended or popped: its count moves, the message events tell the rest)."""
    if old is None:
        return [] if new is None else ["created"]
    if new is None:
        return ["deleted"]
    changes = []
    ended, was_ended = new[_I["ended_at"]], old[_I["ended_at"]]
    if ended != was_ended:
        changes.append("reopened" if ended is None else "ended")
    if new[_I["title"]] != old[_I["title"]]:
        changes.append("titled")
    if any(new[i] != old[i] for i in TOKEN_FIELDS):
        changes.append("tokens")
    if new[_I["system_prompt"]] != old[_I["system_prompt"]]:
        changes.append("system_prompt")
    if new[_I["message_count"]] == 0 and old[_I["message_count"]] != 0:
        changes.append("cleared")
    return changes


def message_row(row: Tuple[Any, ...]) -> Dict[str, Any]:
    """A MessageRow as ``get_messages`` returns it (``tool_calls`` decoded, else ``[]``)."""
    message = dict(zip(MESSAGE_COLUMNS, row))
    if message["tool_calls"]:
        message["tool_calls"] = _decoded(message["tool_calls"], [])
    return message


def session_event(change: str, session_id: str, row: Optional[Tuple[Any, ...]]) -> Dict[str, Any]:
    return {"type": "session", "change": change, "session_id": session_id,
            "session": None if row is None else dict(zip(SESSION_COLUMNS, row))}


class FilePoll:
    """One subscription over the file: ``open()`` once (the replay), then ``poll()`` every
    ``POLL_S``; both return the events due. ``close()`` may come from another thread: it waits
    for a poll under way, and a poll after it returns nothing."""

    def __init__(self, path: str, session_id: Optional[str], source: Optional[str],
                 after_message_id: Optional[int]) -> None:
        self._path = path
        self._session_id = session_id
        self._source = source
        self._cursor = after_message_id
        self._conn: Optional[sqlite3.Connection] = None
        self._version: Optional[int] = None
        self._sessions: Dict[str, Tuple[Any, ...]] = {}
        self._lock = threading.Lock()
        self._closed = False

    def open(self) -> List[Dict[str, Any]]:
        with self._lock:
            # Autocommit, so that each read is one explicit transaction (one snapshot).
            self._conn = sqlite3.connect(self._path, check_same_thread=False, isolation_level=None, timeout=5.0)
            self._conn.execute("PRAGMA query_only = ON")
            return self._read(first=True)

    def poll(self) -> List[Dict[str, Any]]:
        with self._lock:
            if self._conn is None:
                return []
            version = self._conn.execute("PRAGMA data_version").fetchone()[0]
            if version == self._version:
                return []
            return self._read(first=False)

    def close(self) -> None:
        with self._lock:
            conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    def _read(self, first: bool) -> List[Dict[str, Any]]:
        conn = self._conn
        assert conn is not None
        # data_version before the snapshot: a commit between the two is read now and again
        # (harmlessly: the cursor and the rows' differences) at the next poll.
        self._version = conn.execute("PRAGMA data_version").fetchone()[0]
        conn.execute("BEGIN")
        try:
            if self._cursor is None:
                self._cursor = conn.execute("SELECT COALESCE(MAX(id), 0) FROM messages").fetchone()[0]
            messages = self._messages(conn)
            sessions = self._read_sessions(conn)
        finally:
            conn.execute("COMMIT")
        old, self._sessions = self._sessions, sessions
        if first:
            return messages  # session events are live only
        created: List[Dict[str, Any]] = []
        changed: List[Dict[str, Any]] = []
        deleted: List[Dict[str, Any]] = []
        for session_id, row in sessions.items():
            for change in session_changes(old.get(session_id), row):
                (created if change == "created" else changed).append(session_event(change, session_id, row))
        for session_id in old.keys() - sessions.keys():
            deleted.append(session_event("deleted", session_id, None))
        return created + messages + changed + deleted

    def _scope(self, column: str) -> Tuple[str, List[Any]]:
        """The subscription's filter on a session id ``column``: one session, one source, or all."""
        where, params = "", []  # type: Tuple[str, List[Any]]
        if self._session_id is not None:
            where, params = f" AND {column} = ?", [self._session_id]
        if self._source is not None:
            where += f" AND {column} IN (SELECT id FROM sessions WHERE source = ?)"
            params.append(self._source)
        return where, params

    def _messages(self, conn: sqlite3.Connection) -> List[Dict[str, Any]]:
        where, params = self._scope("session_id")
        out: List[Dict[str, Any]] = []
        while True:
            rows = conn.execute(
                f"SELECT {', '.join(MESSAGE_COLUMNS)} FROM messages WHERE id > ?{where} ORDER BY id LIMIT {PAGE}",
                [self._cursor, *params]).fetchall()
            for row in rows:
                out.append({"type": "message", "message": message_row(tuple(row))})
            if rows:
                self._cursor = rows[-1][0]
            if len(rows) < PAGE:
                return out

    def _read_sessions(self, conn: sqlite3.Connection) -> Dict[str, Tuple[Any, ...]]:
        where, params = self._scope("id")
        rows = conn.execute(f"SELECT {', '.join(SESSION_COLUMNS)} FROM sessions WHERE 1{where}", params).fetchall()
        return {row[0]: tuple(row) for row in rows}

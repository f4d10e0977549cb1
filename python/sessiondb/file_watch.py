"""The watch feed read from the SQLite file itself (issue 26): what a handle serves while no daemon
answers it (cold start, bridge.py) or when the daemon it reaches has no ``watch`` op. Its own
``sqlite3`` connection polls ``PRAGMA data_version`` every 50 ms (the TypeScript direct mode's
interval); when another connection has committed, one read transaction takes the messages past
the cursor and the watched sessions' rows, and the rows' differences from the last read are the
session events. Every writer is seen: the daemon, direct mode, the reference's own sqlite3.

Within one poll the events come as commits would have ordered them: sessions created, then the
new messages by id, then the other changes (as the TypeScript side's direct mode gives them)."""
from __future__ import annotations

import sqlite3
import threading
from typing import Any, Dict, List, Optional, Tuple

from .bridge import MESSAGE_COLUMNS, SESSION_COLUMNS, _decoded

POLL_S = 0.05
# Messages read per statement while catching up (a long replay goes in pages).
PAGE = 500

# A session's mutable columns in a compact comparable form (the TypeScript side's marks,
# src/sqlite/change-reader.ts): a system prompt by its length and ends, not a copy of it.
MARK_SELECT = """SELECT id, source, ended_at, title,
  quote(input_tokens) || ',' || quote(output_tokens) || ',' || quote(cache_read_tokens) || ',' || quote(cache_write_tokens)
    || ',' || quote(reasoning_tokens) || ',' || quote(estimated_cost_usd) || ',' || quote(actual_cost_usd) || ',' || quote(model)
    || ',' || quote(billing_provider) || ',' || quote(billing_base_url) || ',' || quote(billing_mode) || ',' || quote(cost_status)
    || ',' || quote(cost_source) || ',' || quote(pricing_version),
  ifnull(length(system_prompt) || ':' || quote(substr(system_prompt, 1, 32)) || quote(substr(system_prompt, -32)), 'null'),
  message_count, tool_call_count FROM sessions"""
# Positions in a mark.
ENDED, TITLE, TOKENS, PROMPT, MESSAGES, TOOL_CALLS = 2, 3, 4, 5, 6, 7


def session_changes(old: Optional[Tuple[Any, ...]], new: Optional[Tuple[Any, ...]]) -> List[str]:
    """What changed between two marks of one session, in the order every mode names them
    (src/operations/session-changes.ts); none for a message appended (its own event tells it)."""
    if old is None:
        return [] if new is None else ["created"]
    if new is None:
        return ["deleted"]
    changes = []
    if new[MESSAGES] < old[MESSAGES] or new[TOOL_CALLS] < old[TOOL_CALLS]:
        changes.append("cleared")
    if new[PROMPT] != old[PROMPT]:
        changes.append("system_prompt")
    if new[TITLE] != old[TITLE]:
        changes.append("titled")
    if new[TOKENS] != old[TOKENS]:
        changes.append("tokens")
    if new[ENDED] != old[ENDED]:
        changes.append("reopened" if new[ENDED] is None else "ended")
    return changes


def message_row(row: Tuple[Any, ...]) -> Dict[str, Any]:
    """A MessageRow as ``get_messages`` returns it (``tool_calls`` decoded, else ``[]``)."""
    message = dict(zip(MESSAGE_COLUMNS, row))
    if message["tool_calls"]:
        message["tool_calls"] = _decoded(message["tool_calls"], [])
    return message


def session_row(conn: sqlite3.Connection, session_id: str) -> Optional[Dict[str, Any]]:
    row = conn.execute(f"SELECT {', '.join(SESSION_COLUMNS)} FROM sessions WHERE id = ?", (session_id,)).fetchone()
    return None if row is None else dict(zip(SESSION_COLUMNS, tuple(row)))


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
            marks = self._marks(conn)
            if first:
                self._sessions = marks
                return self._messages(conn)  # session events are live only
            created: List[Dict[str, Any]] = []
            changed: List[Dict[str, Any]] = []
            old, self._sessions = self._sessions, marks
            for session_id in [*marks, *(k for k in old if k not in marks)]:
                changes = session_changes(old.get(session_id), marks.get(session_id))
                if not changes:
                    continue
                row = session_row(conn, session_id) if session_id in marks else None
                for change in changes:
                    event = {"type": "session", "change": change, "session_id": session_id, "session": row}
                    (created if change == "created" else changed).append(event)
            return created + self._messages(conn) + changed
        finally:
            conn.execute("COMMIT")

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

    def _marks(self, conn: sqlite3.Connection) -> Dict[str, Tuple[Any, ...]]:
        where, params = self._scope("id")
        return {row[0]: tuple(row) for row in conn.execute(f"{MARK_SELECT} WHERE 1{where}", params).fetchall()}

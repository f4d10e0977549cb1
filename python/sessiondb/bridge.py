"""Cold start (issue 30, item 5): when no daemon answers, a handle's first calls go straight to
the file while the daemon starts in the background, and the handle moves to the daemon between
two calls once it answers. A short-lived ``hermes`` command then pays neither the daemon's
start (most of a second of Node) nor its wait: the reference's own cost, a sqlite3 connection.

Safe beside the daemon: these are ordinary writes as the reference makes them (BEGIN IMMEDIATE,
retried while the file is locked), which the daemon tolerates from any process. Only for a
SQLite file that exists, at schema 6, reached by a single name (a second name has its own
``-wal``); only when no daemon holds the file (file_guard.py), and never again once the handle
has moved. The calls served here are the common ones, written exactly as the daemon's engine
writes them (src/sqlite/sessions.ts, messages.ts; the same SQL, ``time.time()``, the client's
``json.dumps`` text); any other call, any argument the engine would check further, any SQLite
error (nothing is committed then) waits for the daemon and goes there, so every outcome stays
the daemon's. Writes carry their idempotency keys, recorded in the write's transaction with the
digest the engine takes (write_digest.py): a key sent again after the move (a resend, a spool's
replay) answers the first result there, not a second write; a key already applied with other
arguments goes to the daemon, which answers IDEMPOTENCY_CONFLICT. Calls are serialized while here, so a call made after another one sees it, on
either side of the move."""
from __future__ import annotations

import json
import os
import sqlite3
import stat
import threading
import time
from typing import Any, Callable, Dict, List, Optional

from .file_connection import _abandoned, open_file_connection
from .immediate_write import write_immediately
from .protocol_description import LIMITS
from .write_digest import DigestMismatch, keyed_write, write_digest

SCHEMA_VERSION = 6
# The reference's write retry: a 1 s busy timeout, then write_immediately's attempts.
BUSY_TIMEOUT_S = 1.0
# Longer strings go to the daemon, which checks them against its size limits.
MAX_DIRECT_TEXT = 1_000_000
MAX_NAME: int = LIMITS["nameMaxLength"]
# How long close() waits for the daemon's process to be spawned (not for it to answer).
SPAWN_WAIT_S = 5.0

SESSION_COLUMNS = (
    "id", "source", "user_id", "model", "model_config", "system_prompt", "parent_session_id",
    "started_at", "ended_at", "end_reason", "message_count", "tool_call_count", "input_tokens",
    "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens",
    "billing_provider", "billing_base_url", "billing_mode", "estimated_cost_usd", "actual_cost_usd",
    "cost_status", "cost_source", "pricing_version", "title",
)
MESSAGE_COLUMNS = (
    "id", "session_id", "role", "content", "tool_call_id", "tool_calls", "tool_name", "timestamp",
    "token_count", "finish_reason", "reasoning", "reasoning_details", "codex_reasoning_items",
)
TOKEN_COLUMNS = (("inputTokens", "input_tokens"), ("outputTokens", "output_tokens"),
                 ("cacheReadTokens", "cache_read_tokens"), ("cacheWriteTokens", "cache_write_tokens"),
                 ("reasoningTokens", "reasoning_tokens"))
TOKEN_TEXTS = (("costStatus", "cost_status"), ("costSource", "cost_source"), ("pricingVersion", "pricing_version"),
               ("billingProvider", "billing_provider"), ("billingBaseUrl", "billing_base_url"),
               ("billingMode", "billing_mode"), ("model", "model"))


class Daemon(Exception):
    """This call goes to the daemon (nothing of it was written here)."""


# -- arguments as the daemon's engine takes them (src/operations/args.ts); anything else: Daemon --

def _name(value: Any, empty: bool = True) -> str:
    if type(value) is not str or len(value) > MAX_NAME or (not empty and value == ""):
        raise Daemon()
    return value


def _opt_name(value: Any) -> Optional[str]:
    return None if value is None else _name(value)


def _opt_text(value: Any) -> Optional[str]:
    if value is None:
        return None
    if type(value) is not str or len(value) > MAX_DIRECT_TEXT:
        raise Daemon()
    return value


def _opt_int(value: Any) -> Optional[int]:
    if value is None:
        return None
    if type(value) is not int or abs(value) > 2 ** 53 - 1:
        raise Daemon()
    return value


def _opt_number(value: Any) -> Optional[float]:
    if value is None:
        return None
    if type(value) not in (int, float) or (type(value) is float and not value == value) or abs(value) == float("inf"):
        raise Daemon()
    return value


def _options(value: Any, known: Any = None) -> Dict[str, Any]:
    """An options map; a key not in ``known`` (a field this file does not know) is the daemon's."""
    if value is None:
        return {}
    if type(value) is not dict or (known is not None and not known.issuperset(value)):
        raise Daemon()
    return value


SESSION_OPTIONS = frozenset({"model", "modelConfig", "modelConfigJson", "systemPrompt", "userId", "parentSessionId"})
MESSAGE_FIELDS = frozenset({"role", "content", "toolName", "toolCalls", "toolCallsJson", "toolCallId", "tokenCount",
                            "finishReason", "reasoning", "reasoningDetails", "reasoningDetailsJson",
                            "codexReasoningItems", "codexReasoningItemsJson", "timestamp"})


def _no_constant(name: str) -> Any:
    raise ValueError(name)  # NaN and infinities: JSON.parse refuses them, so the daemon does


def _json_column(fields: Dict[str, Any], key: str):
    """(stored text, value) as the engine's jsonColumn: the client's own json.dumps text, or a
    value that is stored only when truthy (the client sends only falsy ones as values)."""
    value, text = fields.get(key), fields.get(key + "Json")
    if text is None:
        if value:
            raise Daemon()  # a truthy value the client could not serialize: the daemon's rule
        return None, value
    if value is not None or type(text) is not str or len(text) > MAX_DIRECT_TEXT:
        raise Daemon()
    try:
        parsed = json.loads(text, parse_constant=_no_constant)
    except ValueError:
        raise Daemon() from None
    return (text if parsed else None), parsed


def _tool_call_count(value: Any) -> int:
    if value is None:
        return 0
    return len(value) if isinstance(value, list) else 1


def _decoded(text: Optional[str], fallback: Any) -> Any:
    if not text:
        return fallback
    try:
        return json.loads(text, parse_constant=_no_constant)
    except ValueError:
        return fallback


# -- the writes served here, each as the engine's parse (the arguments as src/sqlite/*.ts's parser
# gives them, in its key order: what the key's digest is taken over) and run(conn, params) --------

def _parse_create_session(args: List[Any]) -> Dict[str, Any]:
    opts = _options(args[2] if len(args) > 2 else None, SESSION_OPTIONS)
    model_config, _ = _json_column(opts, "modelConfig")
    return {"id": _name(args[0], empty=False), "source": _name(args[1], empty=False),
            "model": _opt_name(opts.get("model")), "modelConfig": model_config,
            "systemPrompt": _opt_text(opts.get("systemPrompt")), "userId": _opt_name(opts.get("userId")),
            "parentSessionId": _opt_name(opts.get("parentSessionId"))}


def _create_session(conn: sqlite3.Connection, p: Dict[str, Any]) -> Any:
    conn.execute(
        """INSERT OR IGNORE INTO sessions (id, source, user_id, model, model_config, system_prompt,
           parent_session_id, started_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)""",
        (p["id"], p["source"], p["userId"], p["model"], p["modelConfig"], p["systemPrompt"], p["parentSessionId"],
         time.time()))
    return p["id"]


def _parse_ensure_session(args: List[Any]) -> Dict[str, Any]:
    return {"id": _name(args[0], empty=False), "source": _opt_name(args[1]) or "unknown", "model": _opt_name(args[2])}


def _ensure_session(conn: sqlite3.Connection, p: Dict[str, Any]) -> Any:
    conn.execute("INSERT OR IGNORE INTO sessions (id, source, model, started_at) VALUES (?, ?, ?, ?)",
                 (p["id"], p["source"], p["model"], time.time()))
    return None


def _parse_end_session(args: List[Any]) -> Dict[str, Any]:
    return {"id": _name(args[0]), "endReason": _name(args[1])}


def _end_session(conn: sqlite3.Connection, p: Dict[str, Any]) -> Any:
    conn.execute("UPDATE sessions SET ended_at = ?, end_reason = ? WHERE id = ? AND ended_at IS NULL",
                 (time.time(), p["endReason"], p["id"]))
    return None


def _parse_reopen_session(args: List[Any]) -> Dict[str, Any]:
    return {"id": _name(args[0])}


def _reopen_session(conn: sqlite3.Connection, p: Dict[str, Any]) -> Any:
    conn.execute("UPDATE sessions SET ended_at = NULL, end_reason = NULL WHERE id = ?", (p["id"],))
    return None


def _parse_update_system_prompt(args: List[Any]) -> Dict[str, Any]:
    return {"id": _name(args[0]), "systemPrompt": _opt_text(args[1])}


def _update_system_prompt(conn: sqlite3.Connection, p: Dict[str, Any]) -> Any:
    conn.execute("UPDATE sessions SET system_prompt = ? WHERE id = ?", (p["systemPrompt"], p["id"]))
    return None


def _token_sql(absolute: bool) -> str:
    """The engine's tokenUpdateSql (src/sqlite/sessions.ts), clause for clause."""
    tokens = [f"{col} = :{col}" if absolute else f"{col} = {col} + :{col}" for _, col in TOKEN_COLUMNS]
    estimated = "COALESCE(:estimated, 0)" if absolute else "COALESCE(estimated_cost_usd, 0) + COALESCE(:estimated, 0)"
    actual = ":actual" if absolute else "COALESCE(actual_cost_usd, 0) + :actual"
    return f"""UPDATE sessions SET {", ".join(tokens)},
    estimated_cost_usd = {estimated},
    actual_cost_usd = CASE WHEN :actual IS NULL THEN actual_cost_usd ELSE {actual} END,
    cost_status = COALESCE(:cost_status, cost_status),
    cost_source = COALESCE(:cost_source, cost_source),
    pricing_version = COALESCE(:pricing_version, pricing_version),
    billing_provider = COALESCE(billing_provider, :billing_provider),
    billing_base_url = COALESCE(billing_base_url, :billing_base_url),
    billing_mode = COALESCE(billing_mode, :billing_mode),
    model = COALESCE(model, :model)
    WHERE id = :id"""


TOKEN_SQL = {False: _token_sql(False), True: _token_sql(True)}
# A counter the client sends otherwise (``<key>Bound``, the reference's own bind) is the daemon's.
USAGE_FIELDS = frozenset([key for key, _ in TOKEN_COLUMNS] + [key for key, _ in TOKEN_TEXTS]
                         + ["estimatedCostUsd", "actualCostUsd"])


def _parse_update_token_counts(args: List[Any]) -> Dict[str, Any]:
    usage = _options(args[1], USAGE_FIELDS)
    absolute = _options(args[2] if len(args) > 2 else None, frozenset({"absolute"})).get("absolute", False)
    if type(absolute) is not bool:
        raise Daemon()
    params: Dict[str, Any] = {"id": _name(args[0])}
    for key, col in TOKEN_COLUMNS:
        params[col] = _opt_int(usage[key]) if key in usage else 0  # an explicit None writes NULL
        params[col + "_bound"] = None
    params["estimated"] = _opt_number(usage.get("estimatedCostUsd"))
    params["actual"] = _opt_number(usage.get("actualCostUsd"))
    for key, col in TOKEN_TEXTS:
        params[col] = _opt_name(usage.get(key))
    return {"absolute": absolute, "params": params}


def _update_token_counts(conn: sqlite3.Connection, p: Dict[str, Any]) -> Any:
    conn.execute(TOKEN_SQL[p["absolute"]], p["params"])
    return None


def _parse_append_message(args: List[Any]) -> Dict[str, Any]:
    msg = _options(args[1], MESSAGE_FIELDS)
    tool_calls, tool_calls_value = _json_column(msg, "toolCalls")
    params = {
        "sessionId": _name(args[0]), "role": _name(msg.get("role"), empty=False),
        "content": _opt_text(msg.get("content")), "toolCallId": _opt_name(msg.get("toolCallId")),
        "toolCalls": tool_calls, "toolName": _opt_name(msg.get("toolName")), "tokenCount": _opt_int(msg.get("tokenCount")),
        "tokenCountBound": None, "finishReason": _opt_name(msg.get("finishReason")),
        "reasoning": _opt_text(msg.get("reasoning")), "reasoningDetails": _json_column(msg, "reasoningDetails")[0],
        "codexReasoningItems": _json_column(msg, "codexReasoningItems")[0],
        "toolCallIncrement": _tool_call_count(tool_calls_value),
    }
    stamped = _opt_number(msg.get("timestamp"))
    if stamped is not None:  # absent from the engine's params (undefined) when not given
        if stamped <= 0:
            raise Daemon()
        params["timestamp"] = stamped
    return params


def _append_message(conn: sqlite3.Connection, p: Dict[str, Any]) -> Any:
    cursor = conn.execute(
        """INSERT INTO messages (session_id, role, content, tool_call_id, tool_calls, tool_name, timestamp,
           token_count, finish_reason, reasoning, reasoning_details, codex_reasoning_items)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
        (p["sessionId"], p["role"], p["content"], p["toolCallId"], p["toolCalls"], p["toolName"],
         p.get("timestamp", time.time()), p["tokenCount"], p["finishReason"], p["reasoning"], p["reasoningDetails"],
         p["codexReasoningItems"]),
    )
    conn.execute("UPDATE sessions SET message_count = message_count + 1, tool_call_count = tool_call_count + ? WHERE id = ?",
                 (p["toolCallIncrement"], p["sessionId"]))
    return cursor.lastrowid


def _get_session(conn: sqlite3.Connection, args: List[Any]) -> Any:
    row = conn.execute(f"SELECT {', '.join(SESSION_COLUMNS)} FROM sessions WHERE id = ?", (_name(args[0]),)).fetchone()
    return None if row is None else dict(zip(SESSION_COLUMNS, tuple(row)))


def _get_messages(conn: sqlite3.Connection, args: List[Any]) -> Any:
    rows = conn.execute(f"SELECT {', '.join(MESSAGE_COLUMNS)} FROM messages WHERE session_id = ? ORDER BY timestamp, id",
                        (_name(args[0]),)).fetchall()
    messages = []
    for row in rows:
        message = dict(zip(MESSAGE_COLUMNS, tuple(row)))
        if message["tool_calls"]:
            message["tool_calls"] = _decoded(message["tool_calls"], [])
        messages.append(message)
    return messages


def _get_messages_as_conversation(conn: sqlite3.Connection, args: List[Any]) -> Any:
    rows = conn.execute(
        """SELECT role, content, tool_call_id, tool_name, tool_calls, reasoning, reasoning_details,
           codex_reasoning_items FROM messages WHERE session_id = ? ORDER BY timestamp, id""", (_name(args[0]),)).fetchall()
    out = []
    for role, content, tool_call_id, tool_name, tool_calls, reasoning, details, codex in rows:
        msg: Dict[str, Any] = {"role": role if role is not None else "", "content": content}
        if tool_call_id:
            msg["tool_call_id"] = tool_call_id
        if tool_name:
            msg["tool_name"] = tool_name
        if tool_calls:
            msg["tool_calls"] = _decoded(tool_calls, [])
        if role == "assistant":
            if reasoning:
                msg["reasoning"] = reasoning
            if details:
                msg["reasoning_details"] = _decoded(details, None)
            if codex:
                msg["codex_reasoning_items"] = _decoded(codex, None)
        out.append(msg)
    return out


def _session_count(conn: sqlite3.Connection, args: List[Any]) -> Any:
    source = _opt_name(_options(args[0] if args else None, frozenset({"source"})).get("source"))
    if source is None:
        return conn.execute("SELECT COUNT(*) FROM sessions").fetchone()[0]
    return conn.execute("SELECT COUNT(*) FROM sessions WHERE source = ?", (source,)).fetchone()[0]


def _message_count(conn: sqlite3.Connection, args: List[Any]) -> Any:
    session_id = _opt_name(_options(args[0] if args else None, frozenset({"sessionId"})).get("sessionId"))
    if session_id is None:
        return conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0]
    return conn.execute("SELECT COUNT(*) FROM messages WHERE session_id = ?", (session_id,)).fetchone()[0]


# The writes served here: (parse(args), run(conn, params)).
WRITES: Dict[str, Any] = {
    "createSession": (_parse_create_session, _create_session), "ensureSession": (_parse_ensure_session, _ensure_session),
    "endSession": (_parse_end_session, _end_session), "reopenSession": (_parse_reopen_session, _reopen_session),
    "updateSystemPrompt": (_parse_update_system_prompt, _update_system_prompt),
    "updateTokenCounts": (_parse_update_token_counts, _update_token_counts),
    "appendMessage": (_parse_append_message, _append_message),
}
# The reads served here: run(conn, args).
READS: Dict[str, Any] = {
    "getSession": _get_session, "getMessages": _get_messages, "getMessagesAsConversation": _get_messages_as_conversation,
    "sessionCount": _session_count, "messageCount": _message_count,
}


def usable_file(path: str) -> bool:
    """A regular file of one name at schema 6, to be written beside a daemon."""
    try:
        st = os.stat(path)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and st.st_nlink == 1 and st.st_size > 0


class Bridge:
    """The file, served directly until the daemon started in the background answers."""

    def __init__(self, conn: sqlite3.Connection, start: Callable[[Callable[[], None]], None]) -> None:
        self._conn = conn
        self._lock = threading.Lock()
        self._spawned = threading.Event()
        self._done = threading.Event()
        self._error: Optional[BaseException] = None
        self._thread = threading.Thread(target=self._start, args=(start,), name="sessiondb-autostart", daemon=True)
        self._thread.start()

    @classmethod
    def open(cls, path: str, start: Callable[[Callable[[], None]], None]) -> Optional["Bridge"]:
        """A bridge to the file at ``path`` (its real path), or None when it cannot be used here."""
        if not usable_file(path):
            return None
        try:
            conn = open_file_connection(path, BUSY_TIMEOUT_S)
        except sqlite3.Error:
            return None
        try:
            row = conn.execute("SELECT version FROM schema_version LIMIT 1").fetchone()
            if row is None or row[0] != SCHEMA_VERSION or conn.execute(
                    "SELECT COUNT(*) FROM sqlite_master WHERE name IN ('sessions', 'messages', 'messages_fts')").fetchone()[0] != 3:
                conn.close()
                return None
        except sqlite3.Error:
            conn.close()
            return None
        return cls(conn, start)

    def _start(self, start: Callable[[Callable[[], None]], None]) -> None:
        try:
            start(self._spawned.set)
        except BaseException as err:  # surfaced by the call that moves to the daemon
            self._error = err
        finally:
            self._spawned.set()
            self._done.set()

    @property
    def daemon_ready(self) -> bool:
        """The background start is over (the daemon answered, or it failed: see ``wait``)."""
        return self._done.is_set()

    def wait(self, deadline: float) -> None:
        """Waits for the background start; raises its error, if it failed."""
        self._done.wait(max(0.0, deadline - time.monotonic()))
        if self._error is not None:
            raise self._error

    def run(self, op: str, args: List[Any], key: Optional[str] = None) -> Any:
        """The call's result, or raises Daemon when it must go to the daemon (nothing written).
        ``key``: a write's idempotency key, recorded with it as the daemon records it."""
        if op not in WRITES and op not in READS:
            raise Daemon()
        with self._lock:
            conn = self._conn
            if conn is None:
                raise Daemon()
            try:
                if op in READS:
                    return READS[op](conn, args)
                parse, fn = WRITES[op]
                params = parse(args)
                if key is None:
                    return write_immediately(conn, lambda c: fn(c, params))
                digest = write_digest(op, params)
                return write_immediately(conn, lambda c: keyed_write(c, key, op, digest, lambda: fn(c, params)))
            except (IndexError, KeyError, TypeError, ValueError, UnicodeError, DigestMismatch, sqlite3.Error):
                raise Daemon() from None

    def abandon_after_fork(self) -> None:
        """In a forked child: the parent's connection is kept, never used or closed here (closing
        it could checkpoint and remove the parent's WAL)."""
        _abandoned.append(self._conn)
        self._conn = None
        self._lock = threading.Lock()

    def close(self) -> None:
        """Closes the file's connection; lets the daemon's process be spawned first (bounded), so
        that a process ending right after leaves a daemon starting for the next one."""
        with self._lock:
            conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()
        self._spawned.wait(SPAWN_WAIT_S)

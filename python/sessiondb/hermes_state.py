"""``hermes_state`` as Hermes imports it: every public name of the reference module at schema 6
(NousResearch/hermes-agent ``hermes_state.py``), with ``SessionDB`` served by the daemon.

An unmodified Hermes uses it once ``python3 -m sessiondb.hermes_state --install`` has put a
two-file alias into site-packages (``import hermes_state`` then gives this module; see
``hermes_alias.py``); ``--uninstall`` removes it. Or import it yourself:
``import sessiondb.hermes_state as hermes_state``."""
from __future__ import annotations

import json  # noqa: F401  (the reference module's public names include its imports)
import logging
import os
import random  # noqa: F401
import re  # noqa: F401
import sqlite3  # noqa: F401
import sys
import threading  # noqa: F401
import time  # noqa: F401
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, TypeVar  # noqa: F401

from . import client
from .errors import SessionDBError
from .home import home_dir
from .paths import default_database_path
from .pg_url import is_postgres_url

logger = logging.getLogger(__name__)

T = TypeVar("T")

SCHEMA_VERSION = 6


def get_hermes_home() -> Path:
    """Upstream's ``get_hermes_home()``: ``$HERMES_HOME`` stripped, never ``~``-expanded, else
    ``~/.hermes``."""
    value = os.environ.get("HERMES_HOME", "").strip()
    return Path(value) if value else Path(home_dir()) / ".hermes"


def _default_location() -> Path:
    """The file a SessionDB() opens: ``$SESSIONDB_PATH`` when it names a file, else the Hermes
    home's state.db. A PostgreSQL ``$SESSIONDB_PATH`` is no file (SessionDB() still serves it);
    a path the client refuses (a leading ``~``) is named as Hermes would name it, and SessionDB()
    says why it refuses it: importing this module never fails."""
    try:
        location = default_database_path()
    except SessionDBError:
        return get_hermes_home() / "state.db"
    return get_hermes_home() / "state.db" if is_postgres_url(location) else Path(location)


# Computed at import, as the reference does; tests and tools re-point it (``hermes_state.
# DEFAULT_DB_PATH = tmp / "state.db"``), which SessionDB() then follows.
DEFAULT_DB_PATH = _IMPORT_DEFAULT_DB_PATH = _default_location()

SCHEMA_SQL = """
CREATE TABLE IF NOT EXISTS schema_version (
    version INTEGER NOT NULL
);

CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    source TEXT NOT NULL,
    user_id TEXT,
    model TEXT,
    model_config TEXT,
    system_prompt TEXT,
    parent_session_id TEXT,
    started_at REAL NOT NULL,
    ended_at REAL,
    end_reason TEXT,
    message_count INTEGER DEFAULT 0,
    tool_call_count INTEGER DEFAULT 0,
    input_tokens INTEGER DEFAULT 0,
    output_tokens INTEGER DEFAULT 0,
    cache_read_tokens INTEGER DEFAULT 0,
    cache_write_tokens INTEGER DEFAULT 0,
    reasoning_tokens INTEGER DEFAULT 0,
    billing_provider TEXT,
    billing_base_url TEXT,
    billing_mode TEXT,
    estimated_cost_usd REAL,
    actual_cost_usd REAL,
    cost_status TEXT,
    cost_source TEXT,
    pricing_version TEXT,
    title TEXT,
    FOREIGN KEY (parent_session_id) REFERENCES sessions(id)
);

CREATE TABLE IF NOT EXISTS messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    role TEXT NOT NULL,
    content TEXT,
    tool_call_id TEXT,
    tool_calls TEXT,
    tool_name TEXT,
    timestamp REAL NOT NULL,
    token_count INTEGER,
    finish_reason TEXT,
    reasoning TEXT,
    reasoning_details TEXT,
    codex_reasoning_items TEXT
);

CREATE INDEX IF NOT EXISTS idx_sessions_source ON sessions(source);
CREATE INDEX IF NOT EXISTS idx_sessions_parent ON sessions(parent_session_id);
CREATE INDEX IF NOT EXISTS idx_sessions_started ON sessions(started_at DESC);
CREATE INDEX IF NOT EXISTS idx_messages_session ON messages(session_id, timestamp);
"""

FTS_SQL = """
CREATE VIRTUAL TABLE IF NOT EXISTS messages_fts USING fts5(
    content,
    content=messages,
    content_rowid=id
);

CREATE TRIGGER IF NOT EXISTS messages_fts_insert AFTER INSERT ON messages BEGIN
    INSERT INTO messages_fts(rowid, content) VALUES (new.id, new.content);
END;

CREATE TRIGGER IF NOT EXISTS messages_fts_delete AFTER DELETE ON messages BEGIN
    INSERT INTO messages_fts(messages_fts, rowid, content) VALUES('delete', old.id, old.content);
END;

CREATE TRIGGER IF NOT EXISTS messages_fts_update AFTER UPDATE ON messages BEGIN
    INSERT INTO messages_fts(messages_fts, rowid, content) VALUES('delete', old.id, old.content);
    INSERT INTO messages_fts(rowid, content) VALUES (new.id, new.content);
END;
"""


class SessionDB(client.SessionDB):
    """``sessiondb.SessionDB`` with the reference module's default: ``SessionDB()`` opens
    ``DEFAULT_DB_PATH`` when it was re-pointed, else the default file at call time."""

    def __init__(self, db_path: Optional[Any] = None, *, socket_path: Optional[Any] = None,
                 timeout: float = 30.0, autostart: bool = True, autostart_idle_exit: float = 30.0) -> None:
        if db_path is None and DEFAULT_DB_PATH != _IMPORT_DEFAULT_DB_PATH:
            db_path = DEFAULT_DB_PATH
        super().__init__(db_path, socket_path=socket_path, timeout=timeout, autostart=autostart,
                         autostart_idle_exit=autostart_idle_exit)


__all__ = ["SessionDB", "DEFAULT_DB_PATH", "SCHEMA_VERSION", "SCHEMA_SQL", "FTS_SQL", "T", "logger",
           "get_hermes_home"]


if __name__ == "__main__":
    from .hermes_alias import main

    sys.exit(main(sys.argv[1:]))

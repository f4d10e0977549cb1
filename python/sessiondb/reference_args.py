"""The reference's argument rules. ``hermes_state.SessionDB`` hands every argument to sqlite3,
so it accepts what sqlite3 binds and stores it as the column's affinity makes it: an int id
becomes the text ``'5'``, a ``"5"`` or ``5.0`` token count the integer 5, an int content the
text ``'5'``; a dict raises what sqlite3 raises (``sqlite3.ProgrammingError`` or
``InterfaceError`` by Python version), an int beyond 64 bits ``OverflowError``. These helpers
apply the same rules before a call is sent, so the daemon stores what the reference would have
stored. The conversions are done by this interpreter's own sqlite3 on an in-memory database:
they are SQLite's, not a copy of them."""
from __future__ import annotations

import sqlite3
import threading
from typing import Any, Dict, Optional, Type

from .errors import InvalidArgumentError
from .protocol_description import LIMITS

_PLAIN = (str, int, float)
_memory_lock = threading.Lock()
_memory: Optional[sqlite3.Connection] = None
_refusals: Dict[Type[BaseException], type] = {}


def _sqlite(sql: str, value: Any, name: str) -> Any:
    """One value through SQLite: bound as sqlite3 binds it, then through ``sql``."""
    global _memory
    with _memory_lock:
        if _memory is None:
            _memory = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
            _memory.execute("CREATE TABLE affinity (t TEXT, i INTEGER, r REAL)")
        try:
            if sql.startswith("INSERT"):
                _memory.execute("DELETE FROM affinity")
                _memory.execute(sql, (value,))
                return _memory.execute("SELECT i FROM affinity").fetchone()[0]
            return _memory.execute(sql, (value,)).fetchone()[0]
        except (sqlite3.Error, OverflowError, TypeError, ValueError) as err:
            raise refused(name, err) from None


def refused(name: str, err: BaseException) -> BaseException:
    """The client's INVALID_ARGUMENT, also of the class sqlite3 raised for the reference."""
    cls = type(err)
    error_class = _refusals.get(cls)
    if error_class is None:
        error_class = type(f"Refused{cls.__name__}", (InvalidArgumentError, cls), {
            "__doc__": f"An argument the reference refuses with {cls.__module__}.{cls.__name__}.",
        })
        _refusals[cls] = error_class
    return error_class("INVALID_ARGUMENT", f"{name}: {err}")


def bound(value: Any, name: str) -> Any:
    """What sqlite3 binds for the value: None, int, float, str or bytes (a bool is an int, an
    adapted type its adaptation); raises sqlite3's error for what it cannot bind."""
    if value is None or type(value) in (str, float):
        return value
    if type(value) is int and -(2 ** 63) <= value < 2 ** 63:
        return value
    return _sqlite("SELECT ?", value, name)


def text(value: Any, name: str) -> Any:
    """A value stored in a TEXT column (ids, roles, content…): numbers become SQLite's text."""
    value = bound(value, name)
    if isinstance(value, (int, float)):
        return _sqlite("SELECT CAST(? AS TEXT)", value, name)
    if isinstance(value, bytes):
        # The reference would keep a BLOB in the TEXT column, which its own readers (search,
        # titles, previews, JSON export) do not expect: refused, of the class sqlite3 raises for
        # a value it cannot take.
        raise refused(name, sqlite3.ProgrammingError(
            f"bytes are not stored by sessiondb in a TEXT column (the reference would store a BLOB); "
            f"decode them to str first"))
    return value


def integral(value: Any) -> Any:
    """An INTEGER column keeps a whole REAL as an integer."""
    if isinstance(value, float) and value.is_integer() and -(2 ** 63) <= value < 2 ** 63:
        return int(value)
    return value


def integer(value: Any, name: str) -> Any:
    """A value stored as is in an INTEGER column (``token_count = ?``): ``"5"`` and 5.0 are 5."""
    value = bound(value, name)
    if isinstance(value, str):
        value = _sqlite("INSERT INTO affinity (i) VALUES (?)", value, name)
    return integral(value)


def addend(value: Any, name: str) -> Any:
    """A value added to a counter (``input_tokens = input_tokens + ?``): SQLite's arithmetic
    reads a text as its leading number; NULL stays NULL."""
    value = bound(value, name)
    if isinstance(value, (str, bytes)):
        value = _sqlite("SELECT 0 + ?", value, name)
    return integral(value)


def number(value: Any, name: str) -> Any:
    """A cost (REAL, added or COALESCEd): a text becomes its number."""
    value = bound(value, name)
    if isinstance(value, (str, bytes)):
        value = _sqlite("SELECT 0 + ?", value, name)
    return value


def text_list(values: Any, name: str) -> Any:
    """A filter list: each entry bound as a TEXT comparison binds it."""
    if values is None:
        return None
    return [text(v, f"{name}[{i}]") for i, v in enumerate(values)]


# The daemon's largest page (protocol.json's limitMax): SQLite's LIMIT -1 ("no limit") is sent as this.
MAX_LIMIT: int = LIMITS["limitMax"]


def _whole(value: Any, name: str) -> Any:
    """``LIMIT ?`` / ``OFFSET ?`` take what INTEGER affinity makes an integer (``"5"``, 5.0);
    anything else (5.5, ``"abc"``, bytes) SQLite refuses with "datatype mismatch", which sqlite3
    raises as ``IntegrityError``."""
    value = integer(value, name)
    if value is not None and type(value) is not int:
        raise refused(name, sqlite3.IntegrityError(f"datatype mismatch ({value!r})"))
    return value


def limit(value: Any, name: str) -> Any:
    """``LIMIT ?``: a negative limit is no limit in SQLite (at most MAX_LIMIT rows here)."""
    value = _whole(value, name)
    if isinstance(value, int) and value < 0:
        return MAX_LIMIT
    return value


def offset(value: Any, name: str) -> Any:
    """``OFFSET ?``: SQLite treats a negative offset as 0."""
    value = _whole(value, name)
    if isinstance(value, int) and value < 0:
        return 0
    return value

"""The coded errors of sessiondb (the same codes as the daemon's), each also an instance of the
class the reference ``hermes_state.SessionDB`` raises in that situation (``ValueError``,
``sqlite3.IntegrityError``, ``sqlite3.OperationalError`` "database is locked",
``sqlite3.ProgrammingError`` after close), so code that catches those keeps working."""
from __future__ import annotations

import json
import sqlite3
from typing import Any, Dict, Type

from .protocol_description import ERROR_CODES


class SessionDBError(Exception):
    """Every failure of the client: ``code`` is one of the stable codes of the protocol."""

    code = "INTERNAL"
    # The message SQLite gives the reference in the same situation, put first (callers test
    # ``"locked" in str(err)``), and its result code (``sqlite3.Error.sqlite_errorcode``).
    sqlite_message = ""
    sqlite_code = None

    def __init__(self, code: str, message: str) -> None:
        if self.sqlite_message and not message.startswith(self.sqlite_message):
            message = f"{self.sqlite_message}: {message}"
        super().__init__(message)
        self.code = code
        self.message = message
        if self.sqlite_code is not None:
            self.sqlite_errorcode, self.sqlite_errorname = self.sqlite_code

    def __str__(self) -> str:
        return self.message


class InvalidArgumentError(SessionDBError, ValueError):
    """A bad argument (the reference raises ValueError)."""


class TitleTooLongError(SessionDBError, ValueError):
    """A title over 100 characters after cleaning (the reference raises ValueError)."""


class TitleInUseError(SessionDBError, ValueError):
    """A title another session already has (the reference raises ValueError)."""


class ConstraintError(SessionDBError, sqlite3.IntegrityError):
    """Unknown parent, append to a missing session (the reference lets IntegrityError through)."""


# SQLite's result codes, as the reference's sqlite3 errors carry them.
SQLITE_BUSY = (5, "SQLITE_BUSY")
LOCKED = "database is locked"


class UnavailableError(SessionDBError, sqlite3.OperationalError):
    """No daemon answers for the file (and none could be started), or it was lost mid-call
    (where the reference could not open or use the file: ``sqlite3.OperationalError``)."""


class UntrustedSocketError(UnavailableError):
    """The socket or its directory could be replaced by another user: the client refuses it."""


class OutcomeUnknownError(SessionDBError, sqlite3.OperationalError):
    """The client's deadline passed while the daemon held a write: it may or may not be applied
    (the reference's write would have given up on the lock: ``sqlite3.OperationalError``)."""


class DeadlineError(SessionDBError, TimeoutError, sqlite3.OperationalError):
    """A request outlived its deadline and was not applied (a read, or a write never started):
    where the reference waits on the lock until "database is locked"."""

    sqlite_message = LOCKED
    sqlite_code = SQLITE_BUSY


class BusyError(SessionDBError, sqlite3.OperationalError):
    """The file's write lock stayed taken (by a process bypassing the daemon) past the retries."""

    sqlite_message = LOCKED
    sqlite_code = SQLITE_BUSY


class OverloadedError(SessionDBError, sqlite3.OperationalError):
    """The daemon's queue is full: the call was not applied (the reference: a lock it waited on)."""

    sqlite_message = LOCKED
    sqlite_code = SQLITE_BUSY


class ClosedError(SessionDBError, sqlite3.ProgrammingError):
    """The handle was closed (``sqlite3.ProgrammingError``, as a closed sqlite3 connection)."""

    sqlite_message = "Cannot operate on a closed database"


class NoFileConnectionError(SessionDBError, sqlite3.NotSupportedError):
    """``db._conn`` asked of a handle on a PostgreSQL database, which has no SQLite file."""


class FilePermissionError(SessionDBError, PermissionError, sqlite3.OperationalError):
    """PERMISSION: the database (or its -wal, -shm, -journal) belongs to another user or others
    may write it, so sessiondb does not write it (it may still be read). The reference, refused
    by the file, raises ``sqlite3.OperationalError``."""


class CorruptError(SessionDBError, sqlite3.DatabaseError):
    """CORRUPT: the file is damaged (the reference: ``sqlite3.DatabaseError``)."""

    sqlite_message = "database disk image is malformed"
    sqlite_code = (11, "SQLITE_CORRUPT")


class StorageIOError(SessionDBError, sqlite3.OperationalError):
    """IO: the disk failed a read or write (the reference: ``sqlite3.OperationalError``)."""

    sqlite_message = "disk I/O error"
    sqlite_code = (10, "SQLITE_IOERR")


class SchemaError(SessionDBError, sqlite3.DatabaseError):
    """SCHEMA: the file's schema is not one sessiondb can serve."""


class DaemonError(SessionDBError, sqlite3.OperationalError):
    """PROTOCOL, FRAME_TOO_LARGE, NOT_FOUND, INTERNAL: the daemon could not carry out the call;
    an ``sqlite3.OperationalError``, so a caller's ``except sqlite3.Error`` sees it as it would
    see the reference's failure."""


class IdempotencyConflictError(SessionDBError, ValueError):
    """IDEMPOTENCY_CONFLICT: the ``idempotency_key`` was already applied by another op or with
    other arguments; nothing was applied (the first write stays as it was)."""


class SpooledError(SessionDBError, sqlite3.OperationalError):
    """SPOOLED: the write could not be applied before its deadline and is in the caller's durable
    spool; it will be applied exactly once, in order."""


_CLASSES: Dict[str, Type[SessionDBError]] = {
    "INVALID_ARGUMENT": InvalidArgumentError,
    "TITLE_TOO_LONG": TitleTooLongError,
    "TITLE_IN_USE": TitleInUseError,
    "CONSTRAINT": ConstraintError,
    "UNAVAILABLE": UnavailableError,
    "OUTCOME_UNKNOWN": OutcomeUnknownError,
    "TIMEOUT": DeadlineError,
    "CLOSED": ClosedError,
    "PERMISSION": FilePermissionError,
    "CORRUPT": CorruptError,
    "IO": StorageIOError,
    "SCHEMA": SchemaError,
    "PROTOCOL": DaemonError,
    "FRAME_TOO_LARGE": DaemonError,
    "NOT_FOUND": DaemonError,
    "INTERNAL": DaemonError,
    "BUSY": BusyError,
    "OVERLOADED": OverloadedError,
    "IDEMPOTENCY_CONFLICT": IdempotencyConflictError,
    "SPOOLED": SpooledError,
}


# The protocol's codes (protocol.json); _CLASSES gives each its class (a test checks it covers them).
KNOWN_CODES = frozenset(ERROR_CODES)


def make_error(code: str, message: str) -> SessionDBError:
    """The error of the right Python type for a code."""
    return _CLASSES.get(code, DaemonError)(code, message)


def from_wire(error: Any) -> SessionDBError:
    """A daemon's ``{code, message}`` as a Python exception. A code this client does not know (a
    newer daemon's) becomes INTERNAL, the code it came with kept in the message, as the
    TypeScript client does."""
    if not isinstance(error, dict):
        return make_error("INTERNAL", "malformed error from the daemon")
    code = error.get("code")
    message = error.get("message")
    if not isinstance(message, str):
        message = "unknown error from the daemon"
    if isinstance(code, str) and code in KNOWN_CODES:
        return make_error(code, message)
    if "code" not in error:
        return make_error("INTERNAL", message)
    return make_error("INTERNAL", f"{message} (code {json.dumps(code, ensure_ascii=False, separators=(',', ':'), default=repr)}, unknown to this client)")

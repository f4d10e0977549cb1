"""The coded errors of sessiondb (the same codes as the daemon's), with the Python types the
reference ``hermes_state.SessionDB`` raises, so code that catches those keeps working."""
from __future__ import annotations

import sqlite3
from typing import Any, Dict, Type


class SessionDBError(Exception):
    """Every failure of the client: ``code`` is one of the stable codes of the protocol."""

    code = "INTERNAL"

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

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


class UnavailableError(SessionDBError):
    """No daemon answers for the file (and none could be started), or it was lost mid-call."""


class UntrustedSocketError(UnavailableError):
    """The socket or its directory could be replaced by another user: the client refuses it."""


class OutcomeUnknownError(SessionDBError):
    """The client's deadline passed while the daemon held a write: it may or may not be applied."""


class DeadlineError(SessionDBError, TimeoutError):
    """A request outlived its deadline and was not applied (a read, or a write never started)."""


class ClosedError(SessionDBError):
    """The handle was closed."""


class FilePermissionError(SessionDBError, PermissionError):
    """PERMISSION: the database (or its -wal, -shm, -journal) belongs to another user or others
    may write it, so sessiondb does not write it (it may still be read)."""


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
}


def make_error(code: str, message: str) -> SessionDBError:
    """The error of the right Python type for a code."""
    return _CLASSES.get(code, SessionDBError)(code, message)


def from_wire(error: Any) -> SessionDBError:
    """A daemon's ``{code, message}`` as a Python exception."""
    if not isinstance(error, dict):
        return make_error("INTERNAL", "malformed error from the daemon")
    code = error.get("code")
    message = error.get("message")
    return make_error(
        code if isinstance(code, str) else "INTERNAL",
        message if isinstance(message, str) else "unknown error from the daemon",
    )

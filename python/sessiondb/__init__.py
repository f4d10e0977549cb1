"""sessiondb: the Python client of the sessiondb daemon, a drop-in for the Hermes agent's
``hermes_state.SessionDB`` (schema 6): ``from sessiondb import SessionDB``."""
from .client import SessionDB
from .errors import (
    ClosedError, ConstraintError, DeadlineError, FilePermissionError, InvalidArgumentError,
    OutcomeUnknownError, SessionDBError, TitleInUseError, TitleTooLongError, UnavailableError, UntrustedSocketError,
)
from .errors import (
    BusyError, CorruptError, DaemonError, NoFileConnectionError, OverloadedError, SchemaError, StorageIOError,
)
from .errors import IdempotencyConflictError, SpooledError
from .paths import default_database_path, default_socket_path, real_database_path
from .protocol import PROTOCOL_VERSION
from .text import MAX_TITLE_LENGTH, contains_cjk, sanitize_fts5_query, sanitize_title

SCHEMA_VERSION = 6
__version__ = "0.1.0"


def __getattr__(name: str):
    # asyncio costs a short-lived process tens of milliseconds to import: only its users pay.
    if name == "AsyncSessionDB":
        from .aio import AsyncSessionDB
        return AsyncSessionDB
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "AsyncSessionDB", "SessionDB", "SessionDBError", "ClosedError", "ConstraintError",
    "DeadlineError", "FilePermissionError", "InvalidArgumentError", "OutcomeUnknownError", "TitleInUseError",
    "TitleTooLongError", "UnavailableError", "UntrustedSocketError", "default_database_path",
    "default_socket_path", "real_database_path", "PROTOCOL_VERSION", "MAX_TITLE_LENGTH",
    "SCHEMA_VERSION", "contains_cjk", "sanitize_fts5_query", "sanitize_title",
]
__all__ += [
    "BusyError", "CorruptError", "DaemonError", "NoFileConnectionError", "OverloadedError", "SchemaError",
    "StorageIOError", "IdempotencyConflictError", "SpooledError",
]

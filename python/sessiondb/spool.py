"""The durable spool (issue 25 item 3; format in docs/spool.md): a write that cannot be applied
before its deadline is appended, with its idempotency key, to a file of the calling user, one per
database identity, and applied later exactly once, in order (the key makes a replay that is cut
short safe to run again).

A line is ``<16 hex: sha256 of the JSON text> <JSON text>\\n``: a record ``{"v": 1, "key", "op",
"args", "ts", "db"}`` or an acknowledgement ``{"v": 1, "ack": key}`` written once the record's
write was applied. A line without its newline or with a bad checksum (a writer killed mid-append)
is ignored, and cut off by the next append. Appends hold flock(LOCK_EX) and fsync before the call
returns; once every record is acknowledged the file is emptied."""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple, Union

from .errors import InvalidArgumentError, SessionDBError, SpooledError

MAX_BYTES = 64 * 1024 * 1024
VERSION = 1
# The failures a write is spooled after: the store could not be reached or stayed locked.
SPOOLED_CODES = frozenset({"UNAVAILABLE", "OUTCOME_UNKNOWN", "TIMEOUT", "BUSY", "OVERLOADED"})
# The answers that refuse a record for good (about the record itself: replaying it again changes
# nothing), so it is acknowledged and dropped; any other failure (the disk full, a read-only file)
# stops the replay and the record stays. The TypeScript replay's REFUSED_FOR_GOOD.
REFUSED_CODES = frozenset({
    "IDEMPOTENCY_CONFLICT", "CONSTRAINT", "INVALID_ARGUMENT", "TITLE_TOO_LONG", "TITLE_IN_USE", "NOT_FOUND", "FRAME_TOO_LARGE",
})


def open_spool(option: Union[bool, Dict[str, Any], None], identity: str) -> Optional["Spool"]:
    """``spool=True`` (the default directory) or ``spool={"dir": ..., "max_bytes": ...}``."""
    if option is None or option is False:
        return None
    if option is True:
        return Spool(identity)
    if isinstance(option, dict) and set(option) <= {"dir", "max_bytes"}:
        max_bytes = option.get("max_bytes", MAX_BYTES)
        if type(max_bytes) is int and max_bytes > 0:
            return Spool(identity, option.get("dir"), max_bytes)
    raise InvalidArgumentError("INVALID_ARGUMENT", f"spool must be True, False or {{'dir': ..., 'max_bytes': ...}}, got {option!r}")


def spool_write(spool: "Spool", err: SessionDBError, key: str, op: str, args: List[Any], ts: float) -> SessionDBError:
    """The error a write made at ``ts`` that failed with ``err`` ends with: SpooledError once it
    is durable in the spool, else ``err`` itself, its message saying why the spool could not take it."""
    try:
        spool.append(key, op, args, ts)
    except (OSError, ValueError) as refused:
        err.message = f"{err.message} (and the spool could not take it: {refused})"
        err.args = (err.message,)
        return err
    return SpooledError(
        "SPOOLED", f"{op} could not be applied before its deadline ({err.code}: {err.message}); it is in the spool "
        f"{spool.path} and will be applied exactly once, in order (key {key})")


def replay_args(record: Dict[str, Any]) -> List[Any]:
    """A record's arguments as its replay sends them: a message without a timestamp of its own
    gets the record's ``ts``, so it sorts where it was written, not where it was replayed. (Had
    its first send been applied after all, its key answers IDEMPOTENCY_CONFLICT: applied once.)"""
    args = record["args"]
    if record["op"] == "appendMessage" and len(args) > 1 and isinstance(args[1], dict) and args[1].get("timestamp") is None:
        return [args[0], {**args[1], "timestamp": record["ts"]}, *args[2:]]
    return args


def default_dir() -> Path:
    state = os.environ.get("XDG_STATE_HOME")
    base = Path(state) if state else Path.home() / ".local" / "state"
    return base / "sessiondb" / "spool"


def spool_path(directory: Path, identity: str) -> Path:
    return directory / f"{hashlib.sha256(identity.encode()).hexdigest()[:32]}.spool"


def encode_line(value: Dict[str, Any]) -> bytes:
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return f"{hashlib.sha256(text.encode()).hexdigest()[:16]} {text}\n".encode()


def decode_lines(data: bytes) -> Tuple[List[Dict[str, Any]], int]:
    """The good lines in order, and the length of the file up to the last complete line."""
    values: List[Dict[str, Any]] = []
    end = data.rfind(b"\n") + 1
    for line in data[:end].splitlines():
        checksum, _, text = line.partition(b" ")
        if hashlib.sha256(text).hexdigest()[:16].encode() != checksum:
            continue  # torn or damaged: never half-applied
        try:
            value = json.loads(text)
        except ValueError:
            continue
        if isinstance(value, dict) and value.get("v") == VERSION:
            values.append(value)
    return values, end


class Spool:
    """The spool file of one database identity for this user."""

    def __init__(self, identity: str, directory: Optional[os.PathLike] = None, max_bytes: int = MAX_BYTES) -> None:
        self.identity = identity
        self.directory = Path(directory) if directory is not None else default_dir()
        self.path = spool_path(self.directory, identity)
        self.max_bytes = max_bytes

    def _open(self) -> int:
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(self.directory, 0o700)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)
        return fd

    def _append(self, fd: int, lines: bytes, bound: bool) -> None:
        data = _read_all(fd)
        _, end = decode_lines(data)
        if end != len(data):
            os.ftruncate(fd, end)  # a torn last line: it was never acknowledged to anyone
        if bound and end + len(lines) > self.max_bytes:
            raise OSError(f"the spool {self.path} is full ({end} bytes, at most {self.max_bytes})")
        os.write(fd, lines)
        os.fsync(fd)

    def append(self, key: str, op: str, args: List[Any], ts: Optional[float] = None) -> None:
        """The write, made at ``ts`` (Unix seconds, default now), durable when this returns. Raises OSError (the
        spool full, not writable) or ValueError (arguments JSON cannot hold)."""
        line = encode_line({"v": VERSION, "key": key, "op": op, "args": args, "ts": time.time() if ts is None else ts, "db": self.identity})
        fd = self._open()
        try:
            self._append(fd, line, bound=True)
        finally:
            os.close(fd)

    def pending(self) -> List[Dict[str, Any]]:
        """The records not yet acknowledged, in the order they were written."""
        if not self.path.exists() or self.path.stat().st_size == 0:
            return []
        fd = self._open()
        try:
            values, _ = decode_lines(_read_all(fd))
        finally:
            os.close(fd)
        acked = {v["ack"] for v in values if "ack" in v}
        return [v for v in values if "key" in v and v["key"] not in acked]

    def acknowledge(self, key: str) -> None:
        """The record's write was applied; once none is left the file is emptied."""
        fd = self._open()
        try:
            self._append(fd, encode_line({"v": VERSION, "ack": key}), bound=False)
            values, _ = decode_lines(_read_all(fd))
            acked = {v["ack"] for v in values if "ack" in v}
            if all(v["key"] in acked for v in values if "key" in v):
                os.ftruncate(fd, 0)
                os.fsync(fd)
        finally:
            os.close(fd)


def _read_all(fd: int) -> bytes:
    os.lseek(fd, 0, os.SEEK_SET)
    chunks = []
    while True:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)

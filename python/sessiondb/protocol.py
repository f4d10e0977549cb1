"""The wire protocol (docs/protocol.md §3): a 4-byte big-endian length, then one MessagePack
value; its version and limits are protocol.json's (protocol_description.py)."""
from __future__ import annotations

import json
import struct
import time
from typing import Any, Dict, List, Optional

import msgpack

from .errors import InvalidArgumentError, SessionDBError, UnavailableError, make_error
from .paths import same_file
from .protocol_description import FRAME, PROTOCOL_VERSION

# The length prefix: 4 bytes, big-endian (FRAME's headerBytes and byteOrder; a test checks them).
HEADER = struct.Struct(">I")
# The daemon's default limit for a request frame.
MAX_REQUEST_FRAME_BYTES: int = FRAME["maxFrameBytes"]
# Replies come from our own daemon: large results (an exported session) are allowed.
MAX_REPLY_FRAME_BYTES: int = FRAME["maxReplyFrameBytes"]


def request_frame(request_id: int, op: str, args: List[Any], timeout_ms: Optional[int], key: Optional[str] = None) -> bytes:
    """The request's frame; arguments MessagePack cannot carry fail this call alone, unsent.
    ``timeout_ms`` is the time the request has left; the same deadline goes beside it on the
    host's clock (``deadlineEpochMs``), so a request that sat in a stalled daemon's socket buffer
    is not started when it wakes (the TypeScript client sends both too). None: no deadline (a
    ``watch``, which lasts until it is ended)."""
    request: Dict[str, Any] = {"id": request_id, "op": op, "args": args}
    if timeout_ms is not None:
        request["timeoutMs"] = timeout_ms
        request["deadlineEpochMs"] = int(time.time() * 1000) + timeout_ms
    if key is not None:  # a write's idempotency key (docs/protocol.md §7.1)
        request["idempotencyKey"] = key
    try:
        body = msgpack.packb(request, use_bin_type=True)
    except (TypeError, ValueError, OverflowError) as err:
        raise InvalidArgumentError(
            "INVALID_ARGUMENT", f"{op}: the arguments cannot be sent to the daemon: {err}"
        ) from None
    if len(body) > MAX_REQUEST_FRAME_BYTES:
        raise InvalidArgumentError(
            "INVALID_ARGUMENT",
            f"{op}: the request is {len(body)} bytes, more than the {MAX_REQUEST_FRAME_BYTES} "
            "bytes the daemon accepts in one frame",
        )
    return HEADER.pack(len(body)) + body


def decode_body(body: bytes) -> Dict[str, Any]:
    value = msgpack.unpackb(body, raw=False, strict_map_key=False)
    if not isinstance(value, dict):
        raise make_error("PROTOCOL", "the daemon sent a frame that is not a map")
    return value


class FrameReader:
    """Splits a byte stream into frame bodies."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def push(self, data: bytes) -> List[bytes]:
        self._buffer += data
        bodies: List[bytes] = []
        while len(self._buffer) >= HEADER.size:
            (length,) = HEADER.unpack_from(self._buffer, 0)
            if length == 0 or length > MAX_REPLY_FRAME_BYTES:
                raise make_error("PROTOCOL", f"the daemon sent a frame of {length} bytes")
            end = HEADER.size + length
            if len(self._buffer) < end:
                break
            bodies.append(bytes(self._buffer[HEADER.size:end]))
            del self._buffer[:end]
        return bodies


HELLO_ARGS = [{"protocol": PROTOCOL_VERSION}]


def is_goodbye(reply: Dict[str, Any]) -> bool:
    """The daemon's goodbye frame (``{id: 0, ok: false, error: {code: "CLOSED"}}``): it closes an
    idle connection, and reads nothing sent after it."""
    error = reply.get("error")
    return (reply.get("id") == 0 and reply.get("ok") is False and isinstance(error, dict)
            and error.get("code") == "CLOSED")


def check_hello(result: Any, database: str, socket_path: str) -> Dict[str, Any]:
    """The daemon's hello, checked: our protocol, and the file we asked for (by its real path,
    or another name of the same file: a daemon found on the identity socket)."""
    if not isinstance(result, dict) or result.get("server") != "sessiondb":
        raise make_error("PROTOCOL", f"what answers on {socket_path} is not a sessiondb daemon")
    if result.get("protocol") != PROTOCOL_VERSION:
        raise protocol_mismatch(socket_path, f"protocol {result.get('protocol')!r}")
    served = result.get("database")
    if isinstance(served, str) and served != database and not same_file(served, database):
        raise UnavailableError(
            "UNAVAILABLE", f"the daemon on {socket_path} serves {served}, not {database}"
        )
    return result


def protocol_mismatch(socket_path: str, what: str) -> SessionDBError:
    return make_error(
        "PROTOCOL",
        f"the daemon on {socket_path} speaks {what}; this client speaks protocol "
        f"{PROTOCOL_VERSION}: install the sessiondb Python package of the same version as the daemon",
    )


def hello_error(error: SessionDBError, socket_path: str) -> SessionDBError:
    """A daemon that refuses our hello with PROTOCOL speaks another (newer) protocol."""
    if error.code == "PROTOCOL":
        return protocol_mismatch(socket_path, f"another protocol ({error.message})")
    return error


def unavailable_message(socket_path: str, database: str, why: str) -> str:
    return (
        f"no sessiondb daemon answers on {socket_path} ({why}); start one with "
        f"`sessiondb serve --db {database}`, or pass autostart=True with `sessiondb` on PATH "
        "or $SESSIONDB_BIN set"
    )


def optional(**fields: Any) -> Dict[str, Any]:
    """An options map without the fields left as None ("not given" stays "not given")."""
    return {k: v for k, v in fields.items() if v is not None}


def with_json(fields: Dict[str, Any], key: str, value: Any) -> None:
    """A JSON column as the reference stores it: ``json.dumps(value)`` with its defaults, sent as
    that text (``<key>Json``), so the daemon stores these very bytes (MessagePack would lose what
    JavaScript cannot hold: ``1.0`` as opposed to ``1``, the order of integer-like keys). A falsy
    value (stored as NULL, but ``{}`` still counts a tool call) and one with NaN or infinities
    (which JSON text cannot hold for the daemon's check) go as the value. Raises what
    ``json.dumps`` raises for what it cannot serialize, as the reference does."""
    if value is None:
        return
    if value:
        try:
            fields[key + "Json"] = json.dumps(value, allow_nan=False)
            return
        except ValueError:
            json.dumps(value)  # a circular value raises here too; only NaN and infinities pass
    fields[key] = value


def remaining_ms(seconds: float) -> Optional[int]:
    """The deadline sent with a request: whole milliseconds, at least 1; None when passed."""
    ms = int(seconds * 1000)
    return ms if ms >= 1 else None

"""One pipelined connection to the daemon for threads: requests from any thread are in flight at
once, a reader thread matches the replies by id, each request waits until its own deadline."""
from __future__ import annotations

import queue
import socket
import threading
import time
from typing import Any, Dict, List, Optional, Tuple

from .errors import DeadlineError, OutcomeUnknownError, SessionDBError, from_wire
from .paths import check_socket_trust
from .protocol_description import WRITE
from .protocol import (
    HELLO_ARGS, FrameReader, check_hello, decode_body, hello_error, is_goodbye, remaining_ms, request_frame,
)

# Extra time a sent request waits beyond the deadline it gave the daemon, so that the daemon's own
# TIMEOUT (which guarantees a write was not applied) normally arrives first. The same 2 s as the
# TypeScript client (LOCAL_GRACE_MS): a write unanswered after deadline + grace is OUTCOME_UNKNOWN.
GRACE_S = 2.0
# The longest one connect attempt and its hello may take.
CONNECT_WAIT_S = 5.0
READ_BYTES = 256 * 1024
# Export pages held for a slow consumer before the socket stops being read.
MAX_BUFFERED_PAGES = 4


class NoDaemon(Exception):
    """Nothing answers on the socket (no file, refused, silent, or closed during hello)."""


class Lost(Exception):
    """The connection died. ``sent``: the request had fully reached the daemon's socket.
    ``goodbye``: the daemon closed the connection for idleness (its goodbye frame) and read
    nothing after it, so the request was not applied."""

    def __init__(self, sent: bool, goodbye: bool = False) -> None:
        super().__init__("the daemon closed the connection" if goodbye else "the connection to the daemon was lost")
        self.sent = sent
        self.goodbye = goodbye


class _Goodbye(Exception):
    """The goodbye frame ends the read loop."""


class _Pending:
    __slots__ = ("event", "reply", "lost", "pages", "abandoned")

    def __init__(self, streaming: bool) -> None:
        self.event = threading.Event()
        self.reply: Optional[Dict[str, Any]] = None
        self.lost = False
        self.abandoned = False
        # A stream's pages, then its final reply, then None when the connection is lost.
        self.pages: Optional["queue.Queue[Tuple[str, Any]]"] = (
            queue.Queue(MAX_BUFFERED_PAGES) if streaming else None
        )


def timeout_error(op: str, kind: str, waited: float) -> SessionDBError:
    if kind == WRITE:
        return OutcomeUnknownError(
            "OUTCOME_UNKNOWN",
            f"{op} got no answer within {waited:.1f} s while the daemon held it: "
            "it may or may not have been applied",
        )
    return DeadlineError("TIMEOUT", f"{op} got no answer from the daemon within {waited:.1f} s")


class Connection:
    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._send_lock = threading.Lock()
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._pending: Dict[int, _Pending] = {}
        self._next_id = 1
        self.lost = False
        # The daemon said goodbye: the requests pending then were never read.
        self.goodbye = False
        self._lost_done = False
        self.hello: Dict[str, Any] = {}
        self._reader = threading.Thread(target=self._read_loop, name="sessiondb-reader", daemon=True)
        self._reader.start()

    @classmethod
    def open(cls, socket_path: str, database: str, deadline: float) -> "Connection":
        """Connects and says hello. Raises NoDaemon when nothing answers, SessionDBError when
        something answers that we must not or cannot use."""
        trusted = check_socket_trust(socket_path)
        if trusted is None:
            raise NoDaemon("no socket file")
        wait = max(0.001, min(deadline - time.monotonic(), CONNECT_WAIT_S))
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(wait)
            sock.connect(trusted.connect_path)
            sock.settimeout(None)
        except OSError as err:
            sock.close()
            raise NoDaemon(err.strerror or str(err)) from None
        finally:
            trusted.close()
        connection = cls(sock)
        try:
            hello = connection.request("hello", "read", HELLO_ARGS, time.monotonic() + wait, grace=0.0)
            connection.hello = check_hello(hello, database, socket_path)
        except Lost:
            connection.close()
            raise NoDaemon("the connection closed during hello") from None
        except DeadlineError:
            connection.close()
            raise NoDaemon(f"no hello within {wait:.1f} s") from None
        except SessionDBError as err:
            connection.close()
            raise hello_error(err, socket_path) from None
        return connection

    def _register(self, streaming: bool) -> Tuple[int, _Pending]:
        with self._lock:
            if self.lost:
                raise Lost(sent=False)
            request_id = self._next_id
            self._next_id = 1 if self._next_id >= 0xFFFFFFFF else self._next_id + 1
            pending = _Pending(streaming)
            self._pending[request_id] = pending
            return request_id, pending

    def _forget(self, request_id: int) -> None:
        with self._lock:
            self._pending.pop(request_id, None)
            if not self._pending:
                self._idle.notify_all()

    def _send(self, request_id: int, op: str, args: List[Any], deadline: Optional[float], key: Optional[str] = None) -> None:
        """Sends the request, or raises with nothing applied (a TIMEOUT, a bad argument, Lost).
        A deadline of None sends none (a watch lasts until it is ended)."""
        ms = None if deadline is None else remaining_ms(deadline - time.monotonic())
        try:
            if ms is None and deadline is not None:
                raise DeadlineError("TIMEOUT", f"{op}: the deadline passed before it was sent")
            frame = request_frame(request_id, op, args, ms, key)
        except SessionDBError:
            self._forget(request_id)
            raise
        try:
            with self._send_lock:
                self._sock.sendall(frame)
        except OSError:
            # Not all of the frame reached the socket: the daemon cannot have run it.
            self._forget(request_id)
            self._lose()
            raise Lost(sent=False) from None

    def request(self, op: str, kind: str, args: List[Any], deadline: float, grace: float = GRACE_S,
                key: Optional[str] = None) -> Any:
        request_id, pending = self._register(streaming=False)
        self._send(request_id, op, args, deadline, key)
        started = time.monotonic()
        if not pending.event.wait(max(0.0, deadline - started) + grace):
            self._forget(request_id)
            if not pending.event.is_set():
                raise timeout_error(op, kind, time.monotonic() - started)
        if pending.lost:
            raise Lost(sent=not self.goodbye, goodbye=self.goodbye)
        return result_of(pending.reply)

    def stream(self, op: str, args: List[Any], timeout: float):
        """Yields the items of a streaming op page by page; each page within ``timeout``."""
        request_id, pending = self._register(streaming=True)
        self._send(request_id, op, args, time.monotonic() + timeout)
        assert pending.pages is not None
        try:
            while True:
                if pending.lost and pending.pages.empty():
                    raise Lost(sent=True)
                try:
                    kind, value = pending.pages.get(timeout=timeout + GRACE_S)
                except queue.Empty:
                    raise timeout_error(op, "read", timeout + GRACE_S) from None
                if kind == "page":
                    yield from value
                elif kind == "reply":
                    result_of(value)
                    return
                else:
                    raise Lost(sent=True)
        finally:
            pending.abandoned = True
            self._forget(request_id)

    def open_stream(self, op: str, args: List[Any]) -> Tuple[int, _Pending]:
        """Sends a request without a deadline whose chunks the caller takes from the pending's
        ``pages`` (a watch: watch.py)."""
        request_id, pending = self._register(streaming=True)
        self._send(request_id, op, args, None)
        return request_id, pending

    def forget(self, request_id: int) -> None:
        self._forget(request_id)

    def _read_loop(self) -> None:
        frames = FrameReader()
        try:
            while True:
                data = self._sock.recv(READ_BYTES)
                if not data:
                    break
                for body in frames.push(data):
                    self._dispatch(decode_body(body))
        except _Goodbye:
            pass
        except Exception:  # a broken frame counts as a lost connection, like EOF
            pass
        self._lose()

    def _dispatch(self, reply: Dict[str, Any]) -> None:
        request_id = reply.get("id")
        with self._lock:
            pending = self._pending.get(request_id) if isinstance(request_id, int) else None
        if pending is None:
            if is_goodbye(reply):
                # Closed for idleness: the next call opens a new connection.
                with self._lock:
                    self.goodbye = True
                    self.lost = True
                raise _Goodbye()
            if request_id == 0 and reply.get("ok") is False:
                raise from_wire(reply.get("error"))  # the daemon rejected the connection itself
            return  # a late reply to a request that gave up waiting
        if pending.pages is not None:
            chunk = reply.get("chunk")
            # A slow consumer blocks this put: the socket stops being read (constant memory).
            item = ("page", chunk) if isinstance(chunk, list) else ("reply", reply)
            while not pending.abandoned:
                try:
                    pending.pages.put(item, timeout=0.1)
                    return
                except queue.Full:
                    continue
            return
        with self._lock:
            self._pending.pop(request_id, None)
            if not self._pending:
                self._idle.notify_all()
        pending.reply = reply
        pending.event.set()

    def _lose(self) -> None:
        with self._lock:
            if self._lost_done:
                return
            self._lost_done = True
            self.lost = True
            failed = list(self._pending.values())
            self._pending.clear()
            self._idle.notify_all()
        for pending in failed:
            pending.lost = True
            pending.event.set()
            if pending.pages is not None:
                try:
                    pending.pages.put_nowait(("lost", None))
                except queue.Full:
                    pass  # the consumer drains the pages, then finds `lost` set

        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def wait_idle(self) -> None:
        """Returns once no request is in flight (each has its own deadline)."""
        with self._lock:
            while self._pending and not self.lost:
                self._idle.wait()

    def abandon_after_fork(self) -> None:
        """In a forked child: closes this process's copy of the socket, nothing more (the
        reader thread is the parent's; shutting the socket down would end its connection)."""
        self.lost = True
        try:
            self._sock.close()
        except OSError:
            pass

    def close(self) -> None:
        self._lose()
        self._sock.close()
        if threading.current_thread() is not self._reader:
            self._reader.join(timeout=5)


def result_of(reply: Optional[Dict[str, Any]]) -> Any:
    if reply is not None and reply.get("ok") is True:
        return reply.get("result")
    raise from_wire(None if reply is None else reply.get("error"))

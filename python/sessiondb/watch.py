"""``SessionDB.watch()``: the sessions' change feed (issue 26) as an iterator of event dicts,
usable from any thread and ended by ``close()`` (from any thread), by closing the generator
that iterates it, or by ``db.close()``.

Through the daemon it is one ``watch`` request on a connection of its own (docs/protocol.md
§6, "Watching"): its ``chunk`` frames carry the events; ``close()`` sends ``unwatch``. The
connection is read only as fast as the events are taken, so a consumer that stops reading
falls behind at the daemon, which drops its queue and sends ``resync``. From the file
(file_watch.py) when the handle is served from it (cold start) or the daemon has no ``watch``.

Events: ``{"type": "message", "message": row}``, ``{"type": "session", "change": …,
"session_id": …, "session": row or None}``, ``{"type": "resync", "after_message_id": n}``;
rows as ``get_messages`` and ``get_session`` return them."""
from __future__ import annotations

import abc
import collections
import queue
import threading
import time
from typing import Any, Callable, Deque, Dict, List, Optional

from .connection import Connection, Lost, result_of
from .errors import SessionDBError, UnavailableError, make_error
from .file_watch import POLL_S, FilePoll
from .protocol import optional

# How long close() waits for the daemon's answer to ``unwatch`` before closing the connection.
UNWATCH_WAIT_S = 2.0
# How often a consumer blocked on the daemon's next chunk looks whether it was closed.
WAKE_S = 0.25


def watch_args(session_id: Any, source: Any, after_message_id: Any) -> Dict[str, Any]:
    """The subscription, checked as the daemon checks it (a bad argument raises here, unsent)."""
    for name, value in (("session_id", session_id), ("source", source)):
        if value is not None and not isinstance(value, str):
            raise make_error("INVALID_ARGUMENT", f"{name} must be a str or None, got {value!r}")
    if session_id is not None and source is not None:
        raise make_error("INVALID_ARGUMENT", "watch takes session_id or source, not both")
    cursor = after_message_id
    # A message id is at most 2**53 - 1 (the daemon's limit, protocol.json): past it, said here in this API's names.
    if cursor is not None and (type(cursor) is not int or cursor < 0 or cursor > 2 ** 53 - 1):
        raise make_error("INVALID_ARGUMENT", f"after_message_id must be a message id (an int from 0 to 2**53 - 1) or None, got {cursor!r}")
    return optional(sessionId=session_id, source=source, afterMessageId=cursor)


def event_from_wire(event: Any) -> Dict[str, Any]:
    """A wire event (camelCase keys) as the Python client gives it (snake_case)."""
    kind = event.get("type") if isinstance(event, dict) else None
    if kind == "message":
        return {"type": "message", "message": event.get("message")}
    if kind == "session":
        return {"type": "session", "change": event.get("change"), "session_id": event.get("sessionId"),
                "session": event.get("session")}
    if kind == "resync":
        return {"type": "resync", "after_message_id": event.get("afterMessageId")}
    raise make_error("PROTOCOL", f"the daemon sent a watch event of an unknown type: {kind!r}")


def no_watch_op(err: SessionDBError) -> bool:
    """The daemon's answer to an op it does not know (an older daemon): PROTOCOL."""
    return err.code == "PROTOCOL"


class Watch(abc.ABC):
    """The iterator ``SessionDB.watch()`` returns. Iterate it; ``close()`` ends it (idempotent)."""

    def __init__(self, on_close: Callable[["Watch"], None]) -> None:
        self._on_close = on_close
        self._closed = False
        self._events: Deque[Dict[str, Any]] = collections.deque()

    def __iter__(self) -> "Watch":
        return self

    @abc.abstractmethod
    def __next__(self) -> Dict[str, Any]:
        """The next event; blocks until one comes. StopIteration once closed."""

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._end()
        self._on_close(self)

    @abc.abstractmethod
    def _end(self) -> None:
        """Releases what the feed holds (its connection); called once, from any thread."""

    def __enter__(self) -> "Watch":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            if not self._closed:
                self._closed = True
                self._end()
        except Exception:
            pass


class FileWatch(Watch):
    """The feed read from the file (file_watch.py), polled while the consumer waits."""

    def __init__(self, path: str, args: Dict[str, Any], on_close: Callable[[Watch], None]) -> None:
        super().__init__(on_close)
        self._wake = threading.Event()
        self._poll = FilePoll(path, args.get("sessionId"), args.get("source"), args.get("afterMessageId"))
        self._events.extend(self._poll.open())

    def __next__(self) -> Dict[str, Any]:
        while True:
            if self._closed:
                raise StopIteration
            if not self._events:
                self._events.extend(self._poll.poll())
            if self._events:
                return self._events.popleft()
            self._wake.wait(POLL_S)

    def _end(self) -> None:
        self._wake.set()
        self._poll.close()


class DaemonWatch(Watch):
    """The feed served by the daemon on a connection of its own. When that connection is lost or
    the daemon stops (``UNAVAILABLE``), it watches again on a new connection (``reconnect``: the
    handle's rules, autostart included) from its cursor, the last message id it gave, asking for a
    ``resync`` first (what sessions did meanwhile is not known), as the TypeScript client does;
    when no daemon answers, or the new one fails at once, it raises ``UNAVAILABLE``."""

    def __init__(self, connection: Connection, args: Dict[str, Any], on_close: Callable[[Watch], None],
                 lost: Callable[[], UnavailableError], fallback: Optional[Callable[[], Watch]],
                 reconnect: Optional[Callable[[], Connection]] = None) -> None:
        super().__init__(on_close)
        self._connection = connection
        self._args = args
        self._cursor: Optional[int] = args.get("afterMessageId")
        self._lost = lost
        self._reconnect = reconnect
        # An older daemon answers PROTOCOL (no such op) before any chunk: then the file's feed.
        self._fallback = fallback
        self._delegate: Optional[Watch] = None
        self._resumed = False  # watched again, and nothing came since: one failure more ends it
        self._id, self._pending = connection.open_stream("watch", [args])

    def __next__(self) -> Dict[str, Any]:
        if self._delegate is not None:
            return next(self._delegate)
        while not self._events:
            pages = self._pending.pages
            assert pages is not None
            if self._closed:
                raise StopIteration
            try:
                kind, value = pages.get(timeout=WAKE_S)
            except queue.Empty:
                if self._pending.lost and pages.empty():
                    kind, value = "lost", None
                else:
                    continue
            if kind == "page":
                self._fallback = None
                self._resumed = False
                for wire in value:
                    event = event_from_wire(wire)
                    if event["type"] == "message":
                        self._cursor = max(self._cursor or 0, event["message"]["id"])
                    elif event["type"] == "resync":
                        self._cursor = event["after_message_id"]
                    self._events.append(event)
                continue
            closed = self._closed
            self._drop_connection()
            if closed:
                self._finish()
                raise StopIteration
            failure: Optional[SessionDBError] = None
            if kind == "reply":
                try:
                    result_of(value)
                    self._finish()
                    raise StopIteration
                except SessionDBError as err:
                    if self._fallback is not None and no_watch_op(err):
                        self._delegate = self._fallback()
                        return next(self._delegate)
                    failure = err
            if (failure is None or failure.code == "UNAVAILABLE") and self._resume():
                continue
            self._finish()
            if failure is not None:
                raise failure  # the daemon's error (UNAVAILABLE when it stopped and no other answers)
            raise self._lost()
        return self._events.popleft()

    def _resume(self) -> bool:
        """Watches again on a new connection; False when it cannot (then the feed ends)."""
        if self._reconnect is None or self._resumed:
            return False
        try:
            connection = self._reconnect()
        except SessionDBError:
            return False
        if self._closed:
            connection.close()
            return False
        args = dict(self._args, resyncFirst=True)
        if self._cursor is not None:
            args["afterMessageId"] = self._cursor
        try:
            self._id, self._pending = connection.open_stream("watch", [args])
        except Lost:
            connection.close()
            return False
        self._connection = connection
        self._resumed = True
        return True

    def _finish(self) -> None:
        if not self._closed:
            self._closed = True
            self._on_close(self)

    def _drop_connection(self) -> None:
        self._pending.abandoned = True
        self._connection.forget(self._id)
        self._connection.close()

    def _end(self) -> None:
        if self._delegate is not None:
            self._delegate.close()
        # Chunks still coming are dropped from now on, so the answer to unwatch gets through.
        self._pending.abandoned = True
        if not self._connection.lost:
            try:
                self._connection.request("unwatch", "read", [self._id], time.monotonic() + UNWATCH_WAIT_S, grace=0.0)
            except (SessionDBError, Lost):
                pass  # closing the connection ends the subscription all the same
        self._connection.forget(self._id)
        self._connection.close()


class Watches:
    """The watches a handle has open, closed with it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: List[Watch] = []

    def add(self, watch: Watch) -> Watch:
        with self._lock:
            self._open.append(watch)
        return watch

    def remove(self, watch: Watch) -> None:
        with self._lock:
            if watch in self._open:
                self._open.remove(watch)

    def close_all(self) -> None:
        with self._lock:
            watches, self._open = self._open, []
        for watch in watches:
            watch.close()

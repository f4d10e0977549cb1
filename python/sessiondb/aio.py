"""``AsyncSessionDB``: the same methods as coroutines over one pipelined asyncio connection.
A frame is written whole without awaiting, and replies are matched by id, so cancelling a
coroutine at any point leaves the connection in step (a late reply is dropped)."""
from __future__ import annotations

import asyncio
import functools
import os
import socket
import time
from typing import Any, AsyncIterator, Dict, List, Optional, Union

from . import forks
from .autostart import IDLE_EXIT_S
from .client import Attempts, Misses, PathLike, Target
from .connection import CONNECT_WAIT_S, GRACE_S, MAX_BUFFERED_PAGES, Lost, NoDaemon, result_of, timeout_error
from .errors import ClosedError, DeadlineError, SessionDBError, UnavailableError
from .idempotency import Resends, write_key
from .operations import Operations
from .paths import check_socket_trust
from .spool import REFUSED_CODES, SPOOLED_CODES, open_spool, replay_args, spool_write
from .watch import watch_args
from .aio_watch import AsyncWatch
from .protocol_description import CONTROL, KEYED_OPS, OPERATION_KINDS, READ, WRITE
from .protocol import HEADER, HELLO_ARGS, MAX_REPLY_FRAME_BYTES, check_hello, decode_body, hello_error, is_goodbye, optional, remaining_ms, request_frame

_LOST = object()
# Connections a forked child inherited: kept from being garbage-collected there (their transport
# would close a descriptor number the child may have reused).
_abandoned: List[Any] = []


class AsyncConnection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer
        self._pending: Dict[int, Any] = {}  # id -> Future (a call) or Queue (a stream)
        self._next_id = 1
        self.lost = False
        # The daemon said goodbye: the requests pending then were never read.
        self.goodbye = False
        self.hello: Dict[str, Any] = {}
        self._task = asyncio.get_running_loop().create_task(self._read_loop())

    @classmethod
    async def open(cls, socket_path: str, database: str, deadline: float) -> "AsyncConnection":
        trusted = check_socket_trust(socket_path)
        if trusted is None:
            raise NoDaemon("no socket file")
        wait = max(0.001, min(deadline - time.monotonic(), CONNECT_WAIT_S))
        try:
            reader, writer = await asyncio.wait_for(asyncio.open_unix_connection(trusted.connect_path, limit=2 ** 20), wait)
        except (OSError, asyncio.TimeoutError) as err:
            raise NoDaemon(getattr(err, "strerror", None) or str(err) or "no answer") from None
        finally:
            trusted.close()
        connection = cls(reader, writer)
        try:
            hello = await connection.request("hello", READ, HELLO_ARGS, time.monotonic() + wait, grace=0.0)
            connection.hello = check_hello(hello, database, socket_path)
        except Lost:
            await connection.close()
            raise NoDaemon("the connection closed during hello") from None
        except DeadlineError:
            await connection.close()
            raise NoDaemon(f"no hello within {wait:.1f} s") from None
        except SessionDBError as err:
            await connection.close()
            raise hello_error(err, socket_path) from None
        except BaseException:
            await connection.close()
            raise
        return connection

    def _send(self, op: str, args: List[Any], deadline: Optional[float], slot: Any, key: Optional[str] = None) -> int:
        """Registers and writes the request in one step (no await: nothing can cut in). A
        deadline of None sends none (a watch lasts until it is ended)."""
        if self.lost:
            raise Lost(sent=False)
        ms = None if deadline is None else remaining_ms(deadline - time.monotonic())
        if ms is None and deadline is not None:
            raise DeadlineError("TIMEOUT", f"{op}: the deadline passed before it was sent")
        request_id = self._next_id
        frame = request_frame(request_id, op, args, ms, key)
        self._next_id = 1 if self._next_id >= 0xFFFFFFFF else self._next_id + 1
        self._pending[request_id] = slot
        self._writer.write(frame)
        return request_id

    async def request(self, op: str, kind: str, args: List[Any], deadline: float, grace: float = GRACE_S,
                      key: Optional[str] = None) -> Any:
        future = asyncio.get_running_loop().create_future()
        request_id = self._send(op, args, deadline, future, key)
        started = time.monotonic()
        try:
            reply = await asyncio.wait_for(asyncio.shield(future), max(0.0, deadline - started) + grace)
        except asyncio.TimeoutError:
            raise timeout_error(op, kind, time.monotonic() - started) from None
        finally:
            self._pending.pop(request_id, None)
        if reply is _LOST:
            raise Lost(sent=not self.goodbye, goodbye=self.goodbye)
        return result_of(reply)

    async def stream(self, op: str, args: List[Any], timeout: float) -> AsyncIterator[Any]:
        pages: "asyncio.Queue[Any]" = asyncio.Queue(MAX_BUFFERED_PAGES)
        request_id = self._send(op, args, time.monotonic() + timeout, pages)
        try:
            while True:
                try:
                    item = await asyncio.wait_for(pages.get(), timeout + GRACE_S)
                except asyncio.TimeoutError:
                    raise timeout_error(op, READ, timeout + GRACE_S) from None
                if item is _LOST:
                    raise Lost(sent=True)
                chunk = item.get("chunk")
                if isinstance(chunk, list):
                    for value in chunk:
                        yield value
                else:
                    result_of(item)
                    return
        finally:
            self._pending.pop(request_id, None)

    async def _read_loop(self) -> None:
        try:
            while True:
                (length,) = HEADER.unpack(await self._reader.readexactly(HEADER.size))
                if length == 0 or length > MAX_REPLY_FRAME_BYTES:
                    break
                reply = decode_body(await self._reader.readexactly(length))
                if is_goodbye(reply):
                    # Closed for idleness: the next call opens a new connection.
                    self.goodbye = True
                    break
                slot = self._pending.get(reply.get("id"))  # type: ignore[arg-type]
                if isinstance(slot, asyncio.Queue):
                    # A slow consumer blocks this put: the socket stops being read.
                    await slot.put(reply)
                elif slot is not None and not slot.done():
                    self._pending.pop(reply["id"], None)
                    slot.set_result(reply)
        except (asyncio.IncompleteReadError, OSError, ValueError, SessionDBError):
            pass
        finally:
            self._lose()

    def _lose(self) -> None:
        if self.lost:
            return
        self.lost = True
        for slot in self._pending.values():
            if isinstance(slot, asyncio.Queue):
                if not slot.full():
                    slot.put_nowait(_LOST)
            elif not slot.done():
                slot.set_result(_LOST)
        self._pending.clear()
        self._writer.close()

    def abandon_after_fork(self) -> None:
        """In a forked child: closes this process's copy of the socket, nothing more. Its reader
        task belongs to the parent's event loop, which does not run here; a shutdown or the
        transport's close would end or unregister the parent's connection."""
        self.lost = True
        self._pending.clear()
        sock = getattr(self._writer.transport, "_sock", None)
        if isinstance(sock, socket.socket):
            try:
                os.close(sock.detach())
            except OSError:
                pass
        _abandoned.append(self)

    async def wait_idle(self) -> None:
        while self._pending and not self.lost:
            await asyncio.sleep(0.01)

    async def close(self) -> None:
        self._lose()
        self._task.cancel()
        try:
            await self._task
        except (asyncio.CancelledError, Exception):
            pass
        try:
            await self._writer.wait_closed()
        except (OSError, asyncio.CancelledError):
            pass


class AsyncSessionDB(Operations):
    """The asyncio twin of SessionDB: every method is a coroutine; calls from many tasks share one
    pipelined connection. Connects on first use, or ``await db.connect()``, or ``async with``.
    Fork-safe: a forked child that goes on using the handle (on its own event loop) connects anew."""

    def __init__(self, db_path: Optional[PathLike] = None, *, socket_path: Optional[PathLike] = None,
                 timeout: float = 30.0, autostart: bool = True,
                 autostart_idle_exit: float = IDLE_EXIT_S, spool: Union[bool, Dict[str, Any]] = False) -> None:
        self._target = Target(db_path, socket_path, timeout, autostart, autostart_idle_exit)
        self._spool = open_spool(spool, self._target.database)
        self.db_path = self._target.db_path
        self._connection: Optional[AsyncConnection] = None
        self._connecting: Optional[asyncio.Lock] = None
        self._closed = False
        self._watches: List[AsyncWatch] = []
        forks.track(self)

    def _forget_after_fork(self) -> None:
        """In a forked child (os.register_at_fork): the inherited connection and lock belong to
        the parent's event loop; the child's next call (on its own loop) connects anew instead of
        waiting for a reply that the parent's reader would get."""
        connection, self._connection = self._connection, None
        self._connecting = None
        if connection is not None:
            connection.abandon_after_fork()

    @property
    def socket_path(self) -> str:
        return self._target.socket_path

    def _result(self, value: Any) -> Any:
        """A result the reference gives without a matching row, as an awaitable."""
        async def known() -> Any:
            if self._closed:
                raise ClosedError("CLOSED", "this AsyncSessionDB is closed")
            return value
        return known()

    def _then(self, done: Any, value: Any) -> Any:
        async def then() -> Any:
            await done
            return value
        return then()

    async def connect(self) -> "AsyncSessionDB":
        await self._connected(time.monotonic() + self._target.timeout)
        if self._spool is not None and self._spool.pending():
            try:
                await self.replay_spool()
            except SessionDBError as err:
                if err.code not in SPOOLED_CODES:
                    raise  # else: still unreachable; the next write replays first
        return self

    async def _open_first(self, deadline: float) -> AsyncConnection:
        """``Target.open_first`` over asyncio: the same candidates, the same rule."""
        target = self._target
        misses = Misses()
        for candidate in target.candidates():
            try:
                return await AsyncConnection.open(candidate, target.database, deadline)
            except (NoDaemon, UnavailableError) as err:
                misses.add(err)
        raise misses.error()

    async def _open(self, deadline: float) -> AsyncConnection:
        target = self._target
        loop = asyncio.get_running_loop()
        try:
            return await self._open_first(deadline)
        except NoDaemon as err:
            if await loop.run_in_executor(None, target.wait_for_holder, deadline):
                # As Target.connect: a holder gone again after its probe is UNAVAILABLE, never NoDaemon.
                try:
                    return await self._open_first(max(deadline, time.monotonic() + 1.0))
                except NoDaemon as again:
                    raise target.no_daemon(f"{again}, after the daemon holding the file answered") from None
            if not target.autostart:
                raise target.no_daemon(f"{err}; {target.autostart_off()}") from None
        await loop.run_in_executor(None, target.start_daemon)
        try:
            return await self._open_first(max(deadline, time.monotonic() + 1.0))
        except NoDaemon as err:
            raise target.no_daemon(f"{err} after autostart") from None

    async def _connected(self, deadline: float) -> AsyncConnection:
        if self._connecting is None:
            self._connecting = asyncio.Lock()
        async with self._connecting:
            if self._closed:
                raise ClosedError("CLOSED", "this AsyncSessionDB is closed")
            if self._connection is None or self._connection.lost:
                if self._connection is not None:
                    await self._connection.close()
                    self._connection = None
                self._connection = await self._open(deadline)
            return self._connection

    async def _call(self, op: str, args: List[Any], key: Optional[str] = None) -> Any:
        """As SessionDB's: the op's kind is protocol.json's."""
        kind = OPERATION_KINDS.get(op, CONTROL)
        attempts = Attempts(self._target, op, kind)
        if op in KEYED_OPS and self._spool is not None:
            return await self._spooled_write(op, args, write_key(key), attempts.deadline)
        if op in KEYED_OPS:
            return await self._keyed_write(op, args, write_key(key), attempts.deadline)
        for _ in attempts:
            try:
                return await (await self._connected(attempts.deadline)).request(op, kind, args, attempts.deadline)
            except Lost as lost:
                attempts.lost(lost)
        raise attempts.exhausted()

    async def _keyed_write(self, op: str, args: List[Any], key: str, deadline: float) -> Any:
        """As SessionDB's: the keyed write sent again until its deadline while its fate is unknown."""
        resends = Resends(op, deadline)
        while True:
            try:
                return await (await self._connected(deadline)).request(op, WRITE, args, deadline, key=key)
            except Lost as lost:
                resends.sent = resends.sent or lost.sent
                err: BaseException = self._target.lost_write(op) if lost.sent else self._target.no_daemon(
                    f"the connection was lost before {op} was sent")
            except SessionDBError as failed:
                resends.sent = resends.sent or failed.code == "OUTCOME_UNKNOWN"
                err = failed
            await asyncio.sleep(resends.again(err))

    async def _spooled_write(self, op: str, args: List[Any], key: str, deadline: float) -> Any:
        """As SessionDB's: what the spool holds goes first (the caller's order); a write that cannot
        be applied before its deadline is spooled, with the time it was made, and raises SpooledError."""
        assert self._spool is not None
        made = time.time()
        try:
            if self._spool.pending():
                await self.replay_spool(deadline)
            return await self._keyed_write(op, args, key, deadline)
        except SessionDBError as err:
            if err.code not in SPOOLED_CODES:
                raise
            raise spool_write(self._spool, err, key, op, args, made) from err

    async def replay_spool(self, deadline: Optional[float] = None) -> int:
        """As SessionDB's: applies this database's spooled writes, in order, each once (by its key);
        returns how many. Raises the error of the first that cannot be applied yet (it stays)."""
        if self._spool is None:
            return 0
        deadline = deadline if deadline is not None else time.monotonic() + self._target.timeout
        applied = 0
        for record in self._spool.pending():
            try:
                await self._keyed_write(record["op"], replay_args(record), record["key"], deadline)
            except SessionDBError as err:
                if err.code not in REFUSED_CODES:
                    raise
                # Refused for good (a conflict, a constraint): replaying it again changes nothing.
            self._spool.acknowledge(record["key"])
            applied += 1
        return applied

    async def export_all(self, source: Optional[str] = None) -> List[Dict[str, Any]]:
        return [item async for item in self.iter_export_all(source)]

    async def iter_export_all(self, source: Optional[str] = None) -> AsyncIterator[Dict[str, Any]]:
        """``export_all`` streamed on a connection of its own, read only as fast as consumed."""
        if self._closed:
            raise ClosedError("CLOSED", "this AsyncSessionDB is closed")
        connection = await self._open(time.monotonic() + self._target.timeout)
        try:
            async for item in connection.stream("exportAll", [optional(source=source)], self._target.timeout):
                yield item
        except Lost:
            raise self._target.no_daemon("the connection was lost during exportAll") from None
        finally:
            await connection.close()

    def watch(self, session_id: Optional[str] = None, source: Optional[str] = None,
              after_message_id: Optional[int] = None) -> AsyncWatch:
        """``SessionDB.watch`` as an async iterator (``async for event in db.watch(...)``), on a
        daemon connection of its own opened at the first event; ``aclose()``, ``async with``
        or ``db.close()`` ends it. The same events, cursor rules and arguments."""
        args = watch_args(session_id, source, after_message_id)
        if self._closed:
            raise ClosedError("CLOSED", "this AsyncSessionDB is closed")
        target = self._target

        async def open_connection() -> AsyncConnection:
            if self._closed:
                raise ClosedError("CLOSED", "this AsyncSessionDB is closed")
            return await self._open(time.monotonic() + target.timeout)

        watch = AsyncWatch(open_connection, args, None if target._url else target.database,
                           self._watches.remove, lambda: target.no_daemon(
                               "the connection was lost during watch; watch again with after_message_id "
                               "set to the last message id seen"))
        self._watches.append(watch)
        return watch

    async def close(self) -> None:
        """Waits for calls in flight, then closes the connection and ends the watches. Idempotent."""
        for watch in list(self._watches):
            await watch.aclose()
        self._closed = True
        connection, self._connection = self._connection, None
        if connection is not None:
            await connection.wait_idle()
            await connection.close()
        forks.untrack(self)

    async def __aenter__(self) -> "AsyncSessionDB":
        return await self.connect()

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()


def _coroutine(name: str) -> Any:
    method = getattr(Operations, name)

    @functools.wraps(method)
    async def call(self: AsyncSessionDB, *args: Any, **kwargs: Any) -> Any:
        return await method(self, *args, **kwargs)

    return call


# The shared methods return the awaitable of `_call`; here they become real coroutine functions.
for _name, _value in list(vars(Operations).items()):
    if callable(_value) and not _name.startswith("_") and not isinstance(_value, staticmethod):
        setattr(AsyncSessionDB, _name, _coroutine(_name))

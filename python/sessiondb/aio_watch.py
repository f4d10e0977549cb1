"""``AsyncSessionDB.watch()``: the change feed (watch.py) as an async iterator. The daemon's
``watch`` on a connection of its own, opened at the first ``__anext__``; ended by ``aclose()``,
by leaving the ``async for`` of an ``async with db.watch() as feed`` block, or by ``db.close()``.
From the file (file_watch.py, its reads on an executor thread) when the daemon has no watch."""
from __future__ import annotations

import asyncio
import collections
import time
from typing import Any, Callable, Deque, Dict, Optional

from .connection import MAX_BUFFERED_PAGES, Lost, result_of
from .errors import SessionDBError, UnavailableError
from .file_watch import POLL_S, FilePoll
from .watch import UNWATCH_WAIT_S, event_from_wire, no_watch_op


class AsyncWatch:
    def __init__(self, open_connection: Callable[[], Any], args: Dict[str, Any], file_path: Optional[str],
                 on_close: Callable[["AsyncWatch"], None], lost: Callable[[], UnavailableError]) -> None:
        self._open_connection = open_connection
        self._args = args
        self._file_path = file_path  # None for PostgreSQL: no file to fall back to
        self._on_close = on_close
        self._lost = lost
        self._connection: Any = None
        self._pages: Optional["asyncio.Queue[Any]"] = None
        self._id = 0
        self._poll: Optional[FilePoll] = None
        self._started = False
        self._closed = False
        self._events: Deque[Dict[str, Any]] = collections.deque()

    def __aiter__(self) -> "AsyncWatch":
        return self

    async def __aenter__(self) -> "AsyncWatch":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    async def _start(self) -> None:
        self._connection = await self._open_connection()
        self._pages = asyncio.Queue(MAX_BUFFERED_PAGES)
        try:
            self._id = self._connection._send("watch", [self._args], None, self._pages)
        except Lost:
            await self._connection.close()
            raise self._lost() from None

    async def __anext__(self) -> Dict[str, Any]:
        if self._closed:
            raise StopAsyncIteration
        if self._poll is not None:
            return await self._next_from_file()
        if self._connection is None:
            await self._start()
        assert self._pages is not None
        while not self._events:
            item = await self._pages.get()
            if self._closed:
                raise StopAsyncIteration
            chunk = item.get("chunk") if isinstance(item, dict) else None
            if isinstance(chunk, list):
                self._started = True
                self._events.extend(event_from_wire(e) for e in chunk)
                continue
            await self._drop_connection()
            if not isinstance(item, dict):  # the connection was lost
                self._finish()
                raise self._lost()
            try:
                result_of(item)  # the daemon's error ends the feed with it (UNAVAILABLE on shutdown)
            except SessionDBError as err:
                if self._file_path is None or self._started or not no_watch_op(err):
                    self._finish()
                    raise
                self._poll = FilePoll(self._file_path, self._args.get("sessionId"), self._args.get("source"),
                                      self._args.get("afterMessageId"))
                self._events.extend(await asyncio.get_running_loop().run_in_executor(None, self._poll.open))
                return await self._next_from_file()
            self._finish()
            raise StopAsyncIteration
        return self._events.popleft()

    async def _next_from_file(self) -> Dict[str, Any]:
        assert self._poll is not None
        loop = asyncio.get_running_loop()
        while not self._events:
            if self._closed:
                raise StopAsyncIteration
            self._events.extend(await loop.run_in_executor(None, self._poll.poll))
            if not self._events:
                await asyncio.sleep(POLL_S)
        return self._events.popleft()

    def _finish(self) -> None:
        if not self._closed:
            self._closed = True
            self._on_close(self)

    async def _drop_connection(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            connection._pending.pop(self._id, None)
            await connection.close()

    async def aclose(self) -> None:
        """Ends the feed (idempotent): ``unwatch`` sent, the connection closed."""
        if self._closed:
            return
        self._finish()
        if self._poll is not None:
            self._poll.close()
        connection = self._connection
        if connection is not None and self._pages is not None:
            # Chunks still coming are dropped from now on (a reader waiting to put one goes on),
            # so the answer to unwatch gets through.
            connection._pending.pop(self._id, None)
            while not self._pages.empty():
                self._pages.get_nowait()
        if connection is not None and not connection.lost:
            try:
                await connection.request("unwatch", "read", [self._id], time.monotonic() + UNWATCH_WAIT_S, grace=0.0)
            except (SessionDBError, Lost, asyncio.TimeoutError):
                pass  # closing the connection ends the subscription all the same
        await self._drop_connection()
        if self._pages is not None and self._pages.empty():
            self._pages.put_nowait(None)  # wakes a consumer waiting for the next chunk

"""AsyncSessionDB: many tasks pipelined over one connection; cancelling coroutines at any point
never leaves the connection out of step."""
from __future__ import annotations

import asyncio
import inspect

import pytest

from conftest import Daemon
from sessiondb import AsyncSessionDB, ClosedError, SessionDB


REFERENCE_METHODS = {
    "close", "create_session", "end_session", "reopen_session", "update_system_prompt",
    "update_token_counts", "ensure_session", "get_session", "resolve_session_id", "sanitize_title",
    "set_session_title", "get_session_title", "get_session_by_title", "resolve_session_by_title",
    "get_next_title_in_lineage", "get_compression_tip", "list_sessions_rich", "append_message",
    "get_messages", "get_messages_as_conversation", "search_messages", "search_sessions",
    "session_count", "message_count", "export_session", "export_all", "clear_messages",
    "delete_session", "prune_sessions",
}


def test_every_public_method_is_a_coroutine_function_with_the_sync_signature():
    # replay_spool: the durable spool is SessionDB's alone for now (docs/spool.md).
    names = [n for n in dir(SessionDB) if not n.startswith("_") and inspect.isfunction(getattr(SessionDB, n))
             and n != "replay_spool"]
    assert set(names) == REFERENCE_METHODS | {"iter_export_all", "pop_message", "watch"}
    for name in names:
        sync = getattr(SessionDB, name)
        asynchronous = getattr(AsyncSessionDB, name)
        if name == "sanitize_title":
            assert asynchronous is sync
            continue
        if name == "watch":  # an async iterator object, as the sync one is an iterator object
            assert inspect.signature(asynchronous).parameters == inspect.signature(sync).parameters, name
            continue
        assert inspect.iscoroutinefunction(asynchronous) or inspect.isasyncgenfunction(asynchronous), name
        assert inspect.signature(asynchronous).parameters == inspect.signature(sync).parameters, name


def test_tasks_pipeline_over_one_connection(daemon: Daemon):
    async def main():
        async with AsyncSessionDB(daemon.db, autostart=False) as db:
            await asyncio.gather(*(db.create_session(f"s{t}", "cli") for t in range(16)))

            async def appends(t):
                return [await db.append_message(f"s{t}", "user", f"m{i}") for i in range(100)]

            ids = await asyncio.gather(*(appends(t) for t in range(16)))
            flat = [i for per_task in ids for i in per_task]
            assert len(set(flat)) == 1600
            assert await db.message_count() == 1600
            stats = await db._call("stats", [])
            assert stats["writer"]["maxBatchSize"] > 1
            assert stats["clients"] == 1

    asyncio.run(main())


def test_cancelled_coroutines_leave_the_connection_in_step(daemon: Daemon):
    async def main():
        async with AsyncSessionDB(daemon.db, autostart=False) as db:
            for i in range(10):
                await db.create_session(f"s{i}", "cli")
                await db.set_session_title(f"s{i}", f"title {i}")
            for round_ in range(5):
                tasks = [asyncio.ensure_future(db.get_session_title(f"s{i % 10}")) for i in range(200)]
                for _ in range(round_):
                    await asyncio.sleep(0)
                for task in tasks[::2]:
                    task.cancel()
                results = await asyncio.gather(*tasks, return_exceptions=True)
                for i, result in enumerate(results):
                    if not isinstance(result, asyncio.CancelledError):
                        assert result == f"title {i % 10}"
            for _ in range(50):
                try:
                    await asyncio.wait_for(db.get_session("s3"), 0.0005)
                except asyncio.TimeoutError:
                    pass
            assert [await db.get_session_title(f"s{i}") for i in range(10)] == [f"title {i}" for i in range(10)]
            assert (await db.get_session("s7"))["id"] == "s7"

    asyncio.run(main())


def test_iter_export_all_streams_and_close_is_idempotent(daemon: Daemon):
    async def main():
        db = AsyncSessionDB(daemon.db, autostart=False)
        for i in range(150):
            await db.create_session(f"s{i:03d}", "cli")
        seen = [s["id"] async for s in db.iter_export_all()]
        assert len(seen) == 150 and len(set(seen)) == 150
        assert len(await db.export_all(source="cli")) == 150
        await db.close()
        await db.close()
        with pytest.raises(ClosedError):
            await db.session_count()

    asyncio.run(main())


@pytest.mark.parametrize("engine", ["sqlite"])
def test_a_forked_child_using_the_handle_reconnects_instead_of_hanging(daemon: Daemon):
    """Issue 30 item 6 for AsyncSessionDB: the child's calls, on its own event loop, get a
    connection of their own (before: they waited the whole timeout for a reply the parent's
    reader task, not running in the child, would have read); the parent's connection goes on."""
    import os

    async def child(db: AsyncSessionDB) -> None:
        await db.create_session("child", "cli")
        await db.append_message("child", "user", "from the child")
        assert (await db.get_session("parent"))["id"] == "parent"
        await db.close()

    async def main():
        db = AsyncSessionDB(daemon.db, autostart=False, timeout=15)
        await db.create_session("parent", "cli")
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:
            status = 1
            try:
                os.close(read_end)
                asyncio.run(child(db))
                os.write(write_end, b"ok")
                status = 0
            except BaseException as err:  # noqa: BLE001 - reported to the parent
                os.write(write_end, repr(err).encode()[:500])
            finally:
                os._exit(status)
        os.close(write_end)
        # Waited for off the loop, so the parent's connection stays served meanwhile.
        _, status = await asyncio.get_running_loop().run_in_executor(None, os.waitpid, pid, 0)
        report = os.read(read_end, 1000).decode()
        os.close(read_end)
        assert os.WEXITSTATUS(status) == 0 and report == "ok", report
        assert (await db.get_messages("child"))[0]["content"] == "from the child"
        assert await db.session_count() == 2
        await db.close()

    asyncio.run(main())

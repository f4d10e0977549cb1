"""The durable spool (issue 25 item 3) from Python: writers while the file is held locked past
the budget get SpooledError for every append, which is then replayed exactly once, in order; a
torn last record (a writer killed mid-append) is ignored, never half-applied; the files are the
user's alone."""
from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path

import pytest

from conftest import run_sql
from sessiondb import InvalidArgumentError, SessionDB, SessionDBError, SpooledError
from sessiondb.spool import Spool


def test_appends_while_the_file_is_locked_past_the_budget_are_spooled_then_replayed_once_in_order(start_daemon, tmp: Path):
    daemon = start_daemon(tmp / "state.db")
    spool_dir = tmp / "spool"
    with SessionDB(daemon.db, autostart=False, timeout=1, spool={"dir": spool_dir}) as db:
        db.create_session("s", "cli")
        db.append_message("s", "user", "before")
        holder = sqlite3.connect(str(daemon.db), isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")  # another process holding the write lock
        try:
            for i in range(5):
                with pytest.raises(SpooledError) as caught:
                    db.append_message("s", "user", f"spooled {i}")
                assert caught.value.code == "SPOOLED"
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        spool = Spool(str(daemon.db), spool_dir)
        records = spool.pending()
        assert [r["args"][1]["content"] for r in records] == [f"spooled {i}" for i in range(5)]
        assert all("timestamp" not in r["args"][1] for r in records), "the call's own arguments, as first sent"
        assert stat.S_IMODE(os.stat(spool_dir).st_mode) == 0o700
        assert stat.S_IMODE(os.stat(spool.path).st_mode) == 0o600
        db.append_message("s", "user", "after")  # the spool goes first: the caller's order
        assert db.replay_spool() == 0
        assert spool.pending() == [] and spool.path.stat().st_size == 0
    rows = run_sql(daemon.db, "SELECT content, timestamp FROM messages WHERE session_id = 's' ORDER BY id")
    assert [r[0] for r in rows] == ["before", *[f"spooled {i}" for i in range(5)], "after"]
    # Replayed messages keep the time their call was made (the record's ts), not their replay's.
    assert [r[1] for r in rows[1:6]] == [r["ts"] for r in records]
    assert rows[0][1] < records[0]["ts"] and records[-1]["ts"] < rows[6][1]


def test_a_replayed_message_sorts_where_it_was_written_among_later_ones(start_daemon, tmp: Path):
    daemon = start_daemon(tmp / "state.db")
    spool = Spool(str(daemon.db), tmp / "spool")
    with SessionDB(daemon.db, autostart=False) as db:
        db.create_session("s", "cli")
        db.append_message("s", "user", "written later, applied first")
        written = db.get_messages("s")[0]["timestamp"] - 60.5
    spool.append("k1", "appendMessage", ["s", {"role": "user", "content": "written first"}], written)
    with SessionDB(daemon.db, autostart=False, spool={"dir": tmp / "spool"}) as db:  # opening replays
        messages = db.get_messages("s")
        assert [m["content"] for m in messages] == ["written first", "written later, applied first"]
        assert messages[0]["timestamp"] == written
        # The replay sent the record's ts with its key: the same call again answers the same id.
        again = db.append_message("s", "user", "written first", timestamp=written, idempotency_key="k1")
        assert again == messages[0]["id"]
        with pytest.raises(SessionDBError) as caught:
            db.append_message("s", "user", "written first", timestamp=written + 1, idempotency_key="k1")
        assert caught.value.code == "IDEMPOTENCY_CONFLICT"


def test_a_torn_last_record_is_ignored_and_cut_off_by_the_next_append(start_daemon, tmp: Path):
    daemon = start_daemon(tmp / "state.db")
    spool = Spool(str(daemon.db), tmp / "spool")
    with SessionDB(daemon.db, autostart=False) as db:
        db.create_session("s", "cli")
    spool.append("k1", "appendMessage", ["s", {"role": "user", "content": "one"}])
    whole = spool.path.read_bytes()
    spool.append("k2", "appendMessage", ["s", {"role": "user", "content": "two"}])
    second = spool.path.read_bytes()[len(whole):]
    with open(spool.path, "ab") as torn:  # kill -9 mid-write: half a record, no newline
        torn.write(second[: len(second) // 2])
    assert [r["key"] for r in spool.pending()] == ["k1", "k2"]
    damaged = bytearray(spool.path.read_bytes())
    spool.append("k3", "appendMessage", ["s", {"role": "user", "content": "three"}])
    assert [r["key"] for r in spool.pending()] == ["k1", "k2", "k3"]
    # A record whose bytes were damaged (its checksum fails) is skipped, never applied in part.
    with open(spool.path, "ab") as bad:
        bad.write(second.replace(b"two", b"owt").replace(b"k2", b"k4"))
    assert [r["key"] for r in spool.pending()] == ["k1", "k2", "k3"]
    assert len(damaged) > len(whole)
    with SessionDB(daemon.db, autostart=False, spool={"dir": tmp / "spool"}) as db:  # opening replays
        assert [m["content"] for m in db.get_messages("s")] == ["one", "two", "three"]
        assert db.replay_spool() == 0


def test_a_full_spool_takes_no_write_and_the_call_raises_the_original_error_saying_so(start_daemon, tmp: Path):
    daemon = start_daemon(tmp / "state.db")
    with SessionDB(daemon.db, autostart=False, timeout=1, spool={"dir": tmp / "spool", "max_bytes": 260}) as db:
        db.create_session("s", "cli")
        holder = sqlite3.connect(str(daemon.db), isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        try:
            with pytest.raises(SpooledError):
                db.append_message("s", "user", "fits")
            with pytest.raises(SessionDBError) as caught:
                db.append_message("s", "user", "x" * 300)
            assert caught.value.code != "SPOOLED" and "spool" in str(caught.value) and "full" in str(caught.value)
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        assert db.replay_spool() == 1
        assert [m["content"] for m in db.get_messages("s")] == ["fits"]


@pytest.mark.parametrize("option", [{"max_bytes": 0}, {"max_bytes": "big"}, {"folder": "x"}, "yes"])
def test_a_bad_spool_option_is_invalid_argument(tmp: Path, option):
    with pytest.raises(InvalidArgumentError):
        SessionDB(tmp / "state.db", autostart=False, spool=option)


def test_async_appends_while_the_file_is_locked_past_the_budget_are_spooled_then_replayed_once_in_order(start_daemon, tmp: Path):
    """AsyncSessionDB(spool=...) as SessionDB: SpooledError while the lock is held, the spool
    replayed before its next write, each record once, in order, at the time its call was made."""
    import asyncio

    from sessiondb.aio import AsyncSessionDB

    daemon = start_daemon(tmp / "state.db")
    spool_dir = tmp / "spool"

    async def main() -> None:
        async with AsyncSessionDB(daemon.db, autostart=False, timeout=1, spool={"dir": spool_dir}) as db:
            await db.create_session("s", "cli")
            await db.append_message("s", "user", "before")
            holder = sqlite3.connect(str(daemon.db), isolation_level=None)
            holder.execute("BEGIN IMMEDIATE")  # another process holding the write lock
            try:
                for i in range(3):
                    with pytest.raises(SpooledError) as caught:
                        await db.append_message("s", "user", f"spooled {i}")
                    assert caught.value.code == "SPOOLED"
            finally:
                holder.execute("ROLLBACK")
                holder.close()
            assert len(Spool(str(daemon.db), spool_dir).pending()) == 3
            await db.append_message("s", "user", "after")  # the spool goes first: the caller's order
            assert await db.replay_spool() == 0

    asyncio.run(main())
    spool = Spool(str(daemon.db), spool_dir)
    assert spool.pending() == [] and spool.path.stat().st_size == 0
    assert stat.S_IMODE(os.stat(spool.path).st_mode) == 0o600
    rows = run_sql(daemon.db, "SELECT content FROM messages WHERE session_id = 's' ORDER BY id")
    assert [r[0] for r in rows] == ["before", *[f"spooled {i}" for i in range(3)], "after"]


def test_async_opening_replays_what_the_spool_holds(start_daemon, tmp: Path):
    import asyncio

    from sessiondb.aio import AsyncSessionDB

    daemon = start_daemon(tmp / "state.db")
    with SessionDB(daemon.db, autostart=False) as db:
        db.create_session("s", "cli")
    spool = Spool(str(daemon.db), tmp / "spool")
    spool.append("k1", "appendMessage", ["s", {"role": "user", "content": "spooled earlier"}], 1_700_000_000.5)

    async def main() -> None:
        async with AsyncSessionDB(daemon.db, autostart=False, spool={"dir": tmp / "spool"}) as db:
            assert [m["content"] for m in await db.get_messages("s")] == ["spooled earlier"]

    asyncio.run(main())
    assert spool.pending() == []

"""Cold start (issue 30, item 5): with no daemon running, a handle on an existing file serves its
first calls from the file while autostart starts the daemon in the background, and moves to
the daemon between two calls once it answers. The order of the calls is kept across the move
and nothing is lost or doubled, also with threads calling at once. (How fast: bench/python_cold_start.py.)"""
from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Iterator

import pytest

from conftest import REPO
from sessiondb import SessionDB, UnavailableError
from test_autostart import stop_daemon

WRITER = REPO / "test" / "fixtures" / "hermes_writer.py"
# A bound for the daemon's start on a loaded machine, not a timing.
MOVE_WAIT_S = 120.0


@pytest.fixture
def gate(tmp: Path, bin_env: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The daemon autostart starts waits until this file exists: the calls before are the file's."""
    gate = tmp / "gate"
    wrapper = tmp / "gated-bin"
    # It gives up once the test's folder is gone (a test that never opened the gate leaves no
    # process spinning behind it).
    wrapper.write_text(
        f'#!/bin/sh\nwhile [ ! -e "{gate}" ]; do [ -d "{tmp}" ] || exit 1; sleep 0.01; done\nexec "{bin_env}" "$@"\n'
    )
    wrapper.chmod(0o755)
    monkeypatch.setenv("SESSIONDB_BIN", str(wrapper))
    return gate


@pytest.fixture
def existing(tmp: Path, gate: Path) -> Iterator[Path]:
    """A file as the reference creates it, no daemon serving it; the daemon started is stopped."""
    db = tmp / "state.db"
    subprocess.run([sys.executable, str(WRITER), "create", str(db)], check=True, capture_output=True)
    yield db
    gate.touch()
    stop_daemon(db)


def moved(db: SessionDB) -> bool:
    return db._bridge is None


def test_the_first_calls_go_to_the_file_and_the_handle_moves_to_the_daemon_in_order(existing: Path, gate: Path):
    db = SessionDB(existing, timeout=60)
    db.create_session("s", "cli", model="m", model_config={"t": 1.0})
    ids = []
    for _ in range(10):  # the daemon waits at the gate: these are served by the file
        ids.append(db.append_message("s", "user", f"m{len(ids)}", tool_calls=[{"n": len(ids)}] if len(ids) % 3 == 0 else None))
    assert not moved(db), "no daemon answered: the first calls are the file's"
    assert db._connection is None
    gate.touch()
    give_up = time.monotonic() + MOVE_WAIT_S
    while not moved(db):
        assert time.monotonic() < give_up, "the daemon never answered"
        ids.append(db.append_message("s", "user", f"m{len(ids)}", tool_calls=[{"n": len(ids)}] if len(ids) % 3 == 0 else None))
        assert db.get_messages("s")[-1]["content"] == f"m{len(ids) - 1}", "a call sees the one before it"
    for _ in range(20):
        ids.append(db.append_message("s", "user", f"m{len(ids)}", tool_calls=[{"n": len(ids)}] if len(ids) % 3 == 0 else None))
    assert db._connection is not None and db._connection.hello["server"] == "sessiondb"
    messages = db.get_messages("s")
    assert [m["content"] for m in messages] == [f"m{i}" for i in range(len(ids))]
    assert [m["id"] for m in messages] == ids == sorted(ids)
    session = db.get_session("s")
    assert session["message_count"] == len(ids)
    assert session["tool_call_count"] == len([i for i in range(len(ids)) if i % 3 == 0])
    assert session["model_config"] == '{"t": 1.0}'
    db.close()
    with SessionDB(existing, autostart=False) as other:  # the daemon serves the file now
        assert other.message_count("s") == len(ids)


def test_threads_calling_during_the_move_keep_their_order_and_lose_nothing(existing: Path, gate: Path):
    db = SessionDB(existing, timeout=60)
    db.create_session("t", "cli")
    assert not moved(db)
    opener = threading.Timer(0.3, gate.touch)  # the daemon starts while the threads call
    opener.start()
    per_thread = 40
    results = {}
    errors = []

    def append(n: int) -> None:
        try:
            results[n] = [db.append_message("t", "user", f"{n}:{i}") for i in range(per_thread)]
        except Exception as err:  # noqa: BLE001 - reported below
            errors.append(err)

    while not moved(db):
        threads = [threading.Thread(target=append, args=(n,)) for n in range(len(results), len(results) + 4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert not errors, errors
        assert len(results) < 4 * 200, "the daemon never answered"
    opener.join()
    messages = db.get_messages("t")
    assert len(messages) == len(results) * per_thread == db.get_session("t")["message_count"]
    by_id = {m["id"]: m["content"] for m in messages}
    for n, ids in results.items():
        assert ids == sorted(ids), "each thread's calls in its order"
        assert [by_id[i] for i in ids] == [f"{n}:{i}" for i in range(per_thread)]
    db.close()


def test_a_call_the_file_does_not_serve_waits_for_the_daemon_and_moves(existing: Path, gate: Path):
    db = SessionDB(existing, timeout=60)
    db.create_session("u", "cli")
    db.append_message("u", "user", "findable needle")
    assert not moved(db)
    gate.touch()
    db.set_session_title("u", "A title")  # served by the daemon only: the handle moves here
    assert moved(db)
    assert db.get_session("u")["title"] == "A title"
    assert [h["session_id"] for h in db.search_messages("needle")] == ["u"]
    db.close()


def test_a_bad_argument_during_the_start_gets_the_daemons_error(existing: Path, gate: Path):
    db = SessionDB(existing, timeout=60)
    db.create_session("v", "cli")
    assert not moved(db)
    gate.touch()
    with pytest.raises(Exception) as info:
        db.append_message("missing-session", "user", "x")  # a foreign key: the daemon's CONSTRAINT
    assert getattr(info.value, "code", None) == "CONSTRAINT"
    assert moved(db)
    assert db.message_count() == 0
    db.close()


def test_no_bridge_for_a_missing_file(tmp: Path, bin_env: Path):
    fresh = tmp / "fresh.db"
    try:
        with SessionDB(fresh, timeout=60) as db:  # a new file: the daemon creates it, as before
            assert moved(db)
            db.create_session("w", "cli")
    finally:
        stop_daemon(fresh)


def test_a_daemon_that_fails_to_start_is_reported_by_the_call_that_moves(tmp: Path, bin_env: Path,
                                                                         monkeypatch: pytest.MonkeyPatch):
    db = tmp / "state.db"
    subprocess.run([sys.executable, str(WRITER), "create", str(db)], check=True, capture_output=True)
    failing = tmp / "failing-bin"
    failing.write_text("#!/bin/sh\nexit 3\n")
    failing.chmod(0o755)
    monkeypatch.setenv("SESSIONDB_BIN", str(failing))
    handle = SessionDB(db, timeout=60)
    handle.create_session("x", "cli")  # the file serves it; the start fails in the background
    give_up = time.monotonic() + MOVE_WAIT_S
    with pytest.raises(UnavailableError) as info:
        while time.monotonic() < give_up:
            handle.append_message("x", "user", "served by the file until the start is known to have failed")
    assert "exited with status 3" in str(info.value)
    assert moved(handle)
    handle.close()
    # What the file served before is all there, counted.
    with sqlite3.connect(db) as conn:
        count, = conn.execute("SELECT COUNT(*) FROM messages WHERE session_id = 'x'").fetchone()
        assert conn.execute("SELECT message_count FROM sessions WHERE id = 'x'").fetchone() == (count,)


def test_an_argument_sent_in_a_form_the_file_does_not_serve_goes_to_the_daemon(existing: Path, gate: Path):
    db = SessionDB(existing, timeout=60)
    db.create_session("b", "cli")
    db.update_token_counts("b", input_tokens=2)
    assert not moved(db)
    opener = threading.Timer(0.3, gate.touch)
    opener.start()
    db.update_token_counts("b", input_tokens=5.5)  # a count the reference stores as it binds it
    opener.join()
    assert moved(db)
    assert db.get_session("b")["input_tokens"] == 7.5
    db.close()


@pytest.mark.parametrize("value", ["0", "false"])
def test_sessiondb_autostart_0_takes_no_cold_start_and_starts_nothing_but_a_running_daemon_still_serves(
        existing: Path, gate: Path, start_daemon, monkeypatch: pytest.MonkeyPatch, value: str):
    """Issue 29: with autostart off by the environment, a handle on an existing file neither serves
    from the file (the cold start needs the daemon it would start) nor starts one: UNAVAILABLE,
    the file untouched. A daemon already serving the file is used as ever."""
    monkeypatch.setenv("SESSIONDB_AUTOSTART", value)
    before = existing.read_bytes()
    with pytest.raises(UnavailableError, match="autostart is off \\(SESSIONDB_AUTOSTART\\)"):
        SessionDB(existing, autostart=True)
    assert existing.read_bytes() == before
    # Autostart makes the daemon's log as it spawns it: none was spawned.
    assert not (existing.parent / "state.db.daemon.log").exists() and not (existing.parent / "state.db.sock").exists()
    served = start_daemon(existing)
    with SessionDB(existing, autostart=True) as db:
        assert moved(db) and db._connection is not None
        db.create_session("w", "cli")
        assert db._call("hello", [{}])["pid"] == served.process.pid

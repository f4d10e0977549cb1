"""What a caller sees when there is no daemon, a daemon it must not trust, a daemon of a newer
protocol, or one that does not answer in time: coded errors of the right Python types."""
from __future__ import annotations

import asyncio
import os
import socket
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from conftest import WAIT_LIMIT_S, wait_until
from fake_daemon import FakeDaemon, hello_ok
from sessiondb import (
    AsyncSessionDB, DeadlineError, FilePermissionError, InvalidArgumentError, OutcomeUnknownError, SessionDB, SessionDBError,
    UnavailableError, UntrustedSocketError,
)
from sessiondb.connection import GRACE_S
from sessiondb.errors import DaemonError, from_wire
from sessiondb.paths import real_database_path


def test_no_daemon_and_autostart_off_says_how_to_start_one(tmp: Path):
    with pytest.raises(UnavailableError) as caught:
        SessionDB(tmp / "state.db", autostart=False)
    assert caught.value.code == "UNAVAILABLE"
    assert f"sessiondb serve --db {tmp / 'state.db'}" in str(caught.value)


def test_no_daemon_for_a_postgres_url_names_it_without_its_password(tmp: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp / "run"))
    for make in (SessionDB, lambda *a, **k: asyncio.run(AsyncSessionDB(*a, **k).connect())):
        with pytest.raises(UnavailableError) as caught:
            make("postgresql://me:s3cret@db.example/hermes", autostart=False)
        assert "sessiondb serve --db postgresql://me@db.example:5432/hermes" in str(caught.value)
        assert "s3cret" not in str(caught.value)


def test_autostart_without_a_daemon_executable_is_unavailable(tmp: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("SESSIONDB_BIN", raising=False)
    monkeypatch.setenv("PATH", str(tmp))
    with pytest.raises(UnavailableError) as caught:
        SessionDB(tmp / "state.db")
    assert "SESSIONDB_BIN" in str(caught.value) and "sessiondb serve" in str(caught.value)


def test_a_daemon_that_cannot_start_is_unavailable_and_points_at_its_log(tmp: Path, monkeypatch: pytest.MonkeyPatch):
    broken = tmp / "broken-bin"
    broken.write_text("#!/bin/sh\necho cannot start >&2\nexit 3\n")
    broken.chmod(0o755)
    monkeypatch.setenv("SESSIONDB_BIN", str(broken))
    with pytest.raises(UnavailableError) as caught:
        SessionDB(tmp / "state.db")
    assert "exited with status 3" in str(caught.value)
    assert (tmp / "state.db.daemon.log").read_text().strip() == "cannot start"


def listening_socket(path: str) -> socket.socket:
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(1)
    return server


def test_a_fifo_a_device_or_a_directory_as_the_database_is_invalid_argument_and_nothing_is_created(tmp: Path, bin_env: Path):
    fifo = tmp / "state.db"
    os.mkfifo(fifo)
    beside = [".sock", ".autostart-lock", ".daemon.log", "-journal", ".daemon-lock"]
    for path, kind in [(fifo, "a FIFO (named pipe)"), (Path("/dev/null"), "a character device"), (tmp, "a directory")]:
        existed = {suffix for suffix in beside if os.path.exists(f"{path}{suffix}")}
        for make in (lambda: SessionDB(path, autostart=True), lambda: asyncio.run(AsyncSessionDB(path).connect())):
            with pytest.raises(InvalidArgumentError) as caught:
                make()
            assert caught.value.code == "INVALID_ARGUMENT"
            assert str(caught.value).startswith(f"{path} is {kind}, not a database file")
        assert {suffix for suffix in beside if os.path.exists(f"{path}{suffix}")} == existed, "nothing created beside it"
    assert [name for name in os.listdir(tmp) if name.startswith("state.db")] == ["state.db"]


def test_a_database_others_may_write_or_own_is_file_permission_error_before_any_autostart(tmp: Path, bin_env: Path):
    mine = tmp / "open.db"
    mine.write_bytes(b"")
    os.chmod(mine, 0o666)
    cases = [(mine, "is writable by every user (mode 0666)")]
    if os.geteuid() == 0:  # another user's empty file in a shared folder, as root sees it
        shared = tmp / "shared"
        shared.mkdir()
        os.chmod(shared, 0o1777)
        theirs = shared / "state.db"
        theirs.write_bytes(b"")
        os.chown(theirs, 65534, 65534)
        os.chmod(theirs, 0o644)
        cases.append((theirs, "belongs to uid 65534 (nobody) (mode 0644), not to this user (uid 0 (root))"))
    for path, says in cases:
        for make in (lambda: SessionDB(path), lambda: asyncio.run(AsyncSessionDB(path).connect())):
            with pytest.raises(FilePermissionError) as caught:
                make()
            assert caught.value.code == "PERMISSION" and isinstance(caught.value, PermissionError)
            assert f"{path} {says}" in str(caught.value)
        assert [n for n in os.listdir(path.parent) if n.startswith(path.name)] == [path.name], "no daemon started, no log"
        assert path.stat().st_size == 0


def test_a_socket_in_a_directory_others_may_write_is_refused(tmp: Path):
    shared = tmp / "shared"
    shared.mkdir()
    shared.chmod(0o777)  # world-writable, not sticky: anyone could swap the socket
    server = listening_socket(str(shared / "state.db.sock"))
    try:
        with pytest.raises(UntrustedSocketError) as caught:
            SessionDB(shared / "state.db", autostart=False)
        assert caught.value.code == "UNAVAILABLE" and "writable by other users" in str(caught.value)
    finally:
        server.close()


def test_something_else_at_the_socket_path_is_refused_and_left_alone(tmp: Path, bin_env: Path):
    (tmp / "state.db.sock").write_text("not a socket")
    with pytest.raises(UntrustedSocketError) as caught:
        SessionDB(tmp / "state.db")
    assert "not a socket" in str(caught.value)
    assert (tmp / "state.db.sock").read_text() == "not a socket"


@pytest.mark.skipif(os.getuid() != 0, reason="giving a file to another user needs root")
def test_a_socket_owned_by_another_user_is_refused(tmp: Path):
    server = listening_socket(str(tmp / "state.db.sock"))
    os.chown(tmp / "state.db.sock", 4242, 4242)
    try:
        with pytest.raises(UntrustedSocketError) as caught:
            SessionDB(tmp / "state.db", autostart=False)
        assert "owned by uid 4242" in str(caught.value)
    finally:
        server.close()


def test_a_daemon_speaking_a_newer_protocol_is_a_protocol_error_and_nothing_is_started(tmp: Path, bin_env: Path):
    def refuse(request):
        return {"ok": False, "error": {"code": "PROTOCOL", "message": "this daemon speaks protocol 2 only"}}

    fake = FakeDaemon(str(tmp / "state.db.sock"), refuse)
    try:
        with pytest.raises(SessionDBError) as caught:
            SessionDB(tmp / "state.db")
        assert caught.value.code == "PROTOCOL"
        assert "protocol 2" in str(caught.value) and "sessiondb Python package" in str(caught.value)
        assert not (tmp / "state.db.daemon.log").exists()  # autostart stayed out of it
    finally:
        fake.close()


def test_a_hello_naming_a_newer_protocol_is_a_protocol_error(tmp: Path):
    def newer(request):
        reply = hello_ok(real_database_path(tmp / "state.db"))
        reply["result"]["protocol"] = 2
        return reply

    fake = FakeDaemon(str(tmp / "state.db.sock"), newer)
    try:
        with pytest.raises(SessionDBError) as caught:
            SessionDB(tmp / "state.db", autostart=False)
        assert caught.value.code == "PROTOCOL"
    finally:
        fake.close()


def silent_daemon(tmp: Path) -> FakeDaemon:
    """Answers hello, then holds every other request without an answer."""
    database = real_database_path(tmp / "state.db")
    return FakeDaemon(str(tmp / "state.db.sock"), lambda r: hello_ok(database) if r["op"] == "hello" else None)


def test_a_write_past_its_deadline_is_outcome_unknown_and_a_read_is_timeout(tmp: Path):
    fake = silent_daemon(tmp)
    try:
        with SessionDB(tmp / "state.db", autostart=False, timeout=0.2) as db:
            started = time.monotonic()
            with pytest.raises(OutcomeUnknownError) as write:
                db.append_message("s", "user", "hi")
            # Only after the deadline plus the grace the TypeScript client gives the daemon's own answer.
            assert time.monotonic() - started >= 0.2 + GRACE_S - 0.05
            assert write.value.code == "OUTCOME_UNKNOWN" and not isinstance(write.value, TimeoutError)
            with pytest.raises(DeadlineError) as read:
                db.get_session("s")
            assert read.value.code == "TIMEOUT" and isinstance(read.value, TimeoutError)
        sent = [r for r in fake.requests if r["op"] != "hello"]
        assert [r["op"] for r in sent] == ["appendMessage", "getSession"]
        assert all(isinstance(r["timeoutMs"], int) and 0 < r["timeoutMs"] <= 200 for r in sent)
    finally:
        fake.close()


def test_the_grace_is_the_typescript_clients():
    source = (Path(__file__).resolve().parents[2] / "src" / "client" / "daemon-client.ts").read_text()
    assert f"const LOCAL_GRACE_MS = {int(GRACE_S * 1000)};" in source


def test_each_request_carries_its_deadline_on_the_clock_too(tmp: Path):
    database = real_database_path(tmp / "state.db")
    fake = FakeDaemon(str(tmp / "state.db.sock"), lambda r: hello_ok(database) if r["op"] == "hello" else {"ok": True, "result": 0})
    try:
        with SessionDB(tmp / "state.db", autostart=False, timeout=5) as db:
            before = time.time() * 1000
            db.session_count()
            after = time.time() * 1000
        request = fake.requests[-1]
        assert isinstance(request["deadlineEpochMs"], int)
        assert before + request["timeoutMs"] - 5 <= request["deadlineEpochMs"] <= after + request["timeoutMs"] + 5
        assert 4_000 < request["timeoutMs"] <= 5_000
    finally:
        fake.close()


def test_after_the_goodbye_frame_the_next_call_reconnects(tmp: Path):
    database = real_database_path(tmp / "state.db")
    fake = FakeDaemon(str(tmp / "state.db.sock"), lambda r: hello_ok(database) if r["op"] == "hello" else {"ok": True, "result": 7})
    try:
        with SessionDB(tmp / "state.db", autostart=False, timeout=5) as db:
            assert db.session_count() == 7
            fake.goodbye()
            wait_until("the client to read the goodbye", lambda: db._connection is None or db._connection.lost)
            assert db.session_count() == 7
            assert db.append_message("s", "user", "hi") == 7
        assert [r["op"] for r in fake.requests] == ["hello", "sessionCount", "hello", "sessionCount", "appendMessage"]
    finally:
        fake.close()


def test_a_write_pending_at_the_goodbye_is_resent_with_its_key(tmp: Path):
    database = real_database_path(tmp / "state.db")
    held = threading.Event()

    def answer(request):
        if request["op"] == "hello":
            return hello_ok(database)
        if len(fake.connections_seen()) == 1:
            held.set()
            return None  # held until the goodbye
        return {"ok": True, "result": 3}

    fake = FakeDaemon(str(tmp / "state.db.sock"), answer)
    try:
        with SessionDB(tmp / "state.db", autostart=False, timeout=5) as db:
            threading.Thread(target=lambda: (held.wait(5), fake.goodbye()), daemon=True).start()
            assert db.append_message("s", "user", "hi") == 3  # sent again on a new connection
            held.clear()
            assert db.session_count() == 3
        keys = [r.get("idempotencyKey") for r in fake.requests if r["op"] == "appendMessage"]
        assert len(keys) == 2 and keys[0] == keys[1]
    finally:
        fake.close()


def test_async_after_the_goodbye_frame_the_next_call_reconnects(tmp: Path):
    import asyncio

    database = real_database_path(tmp / "state.db")
    fake = FakeDaemon(str(tmp / "state.db.sock"), lambda r: hello_ok(database) if r["op"] == "hello" else {"ok": True, "result": 5})

    async def main():
        async with AsyncSessionDB(tmp / "state.db", autostart=False, timeout=5) as db:
            assert await db.session_count() == 5
            fake.goodbye()
            give_up = time.monotonic() + WAIT_LIMIT_S
            while db._connection is not None and not db._connection.lost:
                assert time.monotonic() < give_up, "the client did not read the goodbye"
                await asyncio.sleep(0.01)
            assert await db.session_count() == 5
        sent = [r for r in fake.requests if r["op"] != "hello"]
        assert all(isinstance(r["deadlineEpochMs"], int) for r in sent)

    try:
        asyncio.run(main())
        assert [r["op"] for r in fake.requests] == ["hello", "sessionCount", "hello", "sessionCount"]
    finally:
        fake.close()


def test_async_deadlines_give_the_same_codes(tmp: Path):
    import asyncio

    fake = silent_daemon(tmp)

    async def main():
        async with AsyncSessionDB(tmp / "state.db", autostart=False, timeout=0.2) as db:
            with pytest.raises(OutcomeUnknownError):
                await db.create_session("s", "cli")
            with pytest.raises(DeadlineError):
                await db.session_count()

    try:
        asyncio.run(main())
    finally:
        fake.close()


def erring_daemon(tmp: Path, error: dict) -> FakeDaemon:
    """Answers hello, then every other request with ``error``."""
    database = real_database_path(tmp / "state.db")
    return FakeDaemon(str(tmp / "state.db.sock"),
                      lambda r: hello_ok(database) if r["op"] == "hello" else {"ok": False, "error": error})


def test_the_daemons_own_timeout_is_timeout(tmp: Path):
    fake = erring_daemon(tmp, {"code": "TIMEOUT", "message": "deadline passed before the write started"})
    try:
        with SessionDB(tmp / "state.db", autostart=False) as db:
            with pytest.raises(DeadlineError) as caught:
                db.append_message("s", "user", "hi")
            assert caught.value.code == "TIMEOUT"
            assert 29_000 < fake.requests[-1]["timeoutMs"] <= 30_000
    finally:
        fake.close()


def test_an_error_code_this_client_does_not_know_is_internal_naming_the_code(tmp: Path):
    """A newer daemon's code: INTERNAL (a DaemonError, an sqlite3.OperationalError), as the
    TypeScript client maps it, with the daemon's code and message kept in the message."""
    fake = erring_daemon(tmp, {"code": "FROM_A_NEWER_DAEMON", "message": "the shard is rebalancing"})
    try:
        with SessionDB(tmp / "state.db", autostart=False) as db:
            with pytest.raises(DaemonError) as caught:
                db.get_session("s")
        assert caught.value.code == "INTERNAL" and isinstance(caught.value, sqlite3.OperationalError)
        assert str(caught.value) == 'the shard is rebalancing (code "FROM_A_NEWER_DAEMON", unknown to this client)'
    finally:
        fake.close()


def test_a_known_code_keeps_its_message_and_a_missing_code_is_internal():
    assert str(from_wire({"code": "BUSY", "message": "m"})).endswith(": m") and from_wire({"code": "BUSY", "message": "m"}).code == "BUSY"
    assert from_wire({"message": "m"}).code == "INTERNAL" and str(from_wire({"message": "m"})) == "m"
    assert from_wire({"code": 7, "message": "m"}).code == "INTERNAL"
    assert str(from_wire({"code": 7, "message": "m"})) == "m (code 7, unknown to this client)"


def test_a_bad_timeout_is_a_value_error(tmp: Path):
    with pytest.raises(ValueError):
        SessionDB(tmp / "state.db", timeout=0, autostart=False)

"""Autostart (one daemon for eight racing processes), `serve --idle-exit`, and losing the daemon
mid-use: reads retried once, writes never applied twice, the next call reconnects."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Iterator, List

import pytest

from conftest import CLI, REPO, run_sql, wait_for_uptime
from fake_daemon import FakeDaemon, hello_ok
from sessiondb import AsyncSessionDB, SessionDB, UnavailableError
from sessiondb.paths import default_socket_path, real_database_path
from sessiondb.pg_url import pg_identity

RACER = f"""
import sys
sys.path.insert(0, {str(REPO / "python")!r})
from sessiondb import SessionDB
sys.stdin.readline()                      # the go signal: every racer starts at once
db = SessionDB(sys.argv[1], timeout=60)
db.create_session(sys.argv[2], "cli")
print(db._connected(10 ** 9).hello["pid"], flush=True)
sys.stdin.readline()                      # stay connected until told
db.close()
"""


def daemon_pids(db: "Path | str") -> List[int]:
    """The `serve` processes for this file or PostgreSQL identity (through the wrapper script or not)."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if b"serve" in argv and str(db).encode() in argv and any(a.endswith(b"main.js") for a in argv):
            pids.append(int(entry))
    return pids


def stop_daemon(db: "Path | str") -> None:
    """Asks the daemon serving `db` to shut down, and waits until its process is gone."""
    pids = daemon_pids(db)
    try:
        with SessionDB(db, autostart=False) as handle:
            handle._call("shutdown", [])
    except UnavailableError:
        pass
    for pid in pids:
        while process_running(pid):
            time.sleep(0.05)


def process_running(pid: int) -> bool:
    """Alive and not a zombie; a process reaped between two looks is simply gone."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            state = stat.read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


@pytest.fixture
def autostarted(tmp: Path, bin_env: Path) -> Iterator[Path]:
    db = tmp / "state.db"
    yield db
    stop_daemon(db)


def test_eight_processes_racing_on_a_fresh_file_end_with_one_daemon_all_connected(autostarted: Path):
    racers = [subprocess.Popen([sys.executable, "-c", RACER, str(autostarted), f"p{i}"],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) for i in range(8)]
    try:
        for racer in racers:
            racer.stdin.write("go\n")
            racer.stdin.flush()
        pids = {int(racer.stdout.readline()) for racer in racers}
        assert len(pids) == 1
        assert daemon_pids(autostarted) == list(pids)
        with SessionDB(autostarted, autostart=False) as db:
            assert db.session_count() == 8
            assert db._call("stats", [])["clients"] == 9  # the eight racers and us
    finally:
        for racer in racers:
            racer.stdin.write("done\n")
            racer.stdin.close()
            racer.wait()
    assert all(racer.returncode == 0 for racer in racers)
    log = autostarted.parent / "state.db.daemon.log"
    assert log.exists() and os.stat(log).st_mode & 0o077 == 0


def test_the_autostarted_daemon_is_detached_and_stops_after_its_idle_time(tmp: Path, bin_env: Path):
    db = tmp / "state.db"
    handle = SessionDB(db)
    pid = handle._connected(10 ** 9).hello["pid"]
    assert os.getsid(pid) == pid  # a session of its own: the caller's signals do not reach it
    cmdline = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
    assert cmdline[-6:-1] == [b"serve", b"--db", str(db).encode(), b"--idle-exit", b"30"]
    handle.close()
    stop_daemon(db)


def test_a_postgres_url_autostarts_its_daemon_with_the_password_in_its_environment_only(
        tmp: Path, bin_env: Path, pg_server, monkeypatch: pytest.MonkeyPatch):
    base = pg_server.create_database().replace("postgresql:///", "postgresql://postgres:s3cret@/", 1)
    # Connection settings reach the daemon (a daemon given only the identity ran without them).
    url = base + "&sslmode=disable&sslpassword=k3y&application_name=gateway"
    identity = pg_identity(url)
    handle = SessionDB(url)
    try:
        handle.create_session("s", "cli")
        pid = handle._connected(10 ** 9).hello["pid"]
        assert handle.socket_path == default_socket_path(url)
        assert handle.socket_path.startswith(str(tmp / "run" / "sessiondb") + "/")
        cmdline = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
        served = base.replace("postgres:s3cret@", "postgres@") + "&sslmode=disable&application_name=gateway"
        assert cmdline[-6:-1] == [b"serve", b"--db", served.encode(), b"--idle-exit", b"30"]
        assert not any(b"s3cret" in arg or b"k3y" in arg for arg in cmdline)
        assert b"PGPASSWORD=s3cret" in open(f"/proc/{pid}/environ", "rb").read().split(b"\0")
        log = Path(handle.socket_path[:-len(".sock")] + ".daemon.log")
        assert log.exists() and os.stat(log).st_mode & 0o077 == 0

        import asyncio

        async def other_spelling():  # the URL without its password reaches the same daemon
            async with AsyncSessionDB(url.replace("postgres:s3cret@", ""), autostart=False) as db:
                return (await db._connected(time.monotonic() + 30)).hello["pid"], await db.session_count()

        assert asyncio.run(other_spelling()) == (pid, 1)
        monkeypatch.setenv("SESSIONDB_PATH", url)  # the default database may be a URL too
        with SessionDB(autostart=False) as by_default:
            assert by_default._connected(10 ** 9).hello["pid"] == pid
    finally:
        handle.close()
        stop_daemon(identity)


def test_serve_idle_exit_stops_cleanly_once_no_client_is_connected(tmp: Path, bin_env: Path):
    db = tmp / "state.db"
    log = open(tmp / "serve.log", "wb")
    daemon = subprocess.Popen(["node", str(CLI), "serve", "--db", str(db), "--idle-exit", "2"],
                              stdout=log, stderr=log)
    try:
        handle = None
        while handle is None:
            try:
                handle = SessionDB(db, autostart=False)
            except UnavailableError:
                assert daemon.poll() is None
                time.sleep(0.05)
        handle.create_session("s", "cli")
        # Longer than an idle period with a client connected, on the daemon's clock: it must still
        # serve. (The period is 2 s because the test must connect within one of the daemon
        # starting to listen.)
        wait_for_uptime(handle, 3)
        assert daemon.poll() is None and handle.session_count() == 1
        handle.close()
        assert daemon.wait(timeout=60) == 0
    finally:
        if daemon.poll() is None:
            daemon.kill()
        log.close()
    assert not os.path.exists(f"{db}.sock")
    assert "--idle-exit" in (tmp / "serve.log").read_text()
    assert run_sql(db, "SELECT COUNT(*) FROM sessions")[0][0] == 1


def test_kill_9_mid_load_loses_no_acknowledged_write_and_the_next_call_works(autostarted: Path):
    db = SessionDB(autostarted)
    db.create_session("s", "cli")
    first_pid = db._connected(10 ** 9).hello["pid"]
    acknowledged, unknown, other = [], [], []
    killed = threading.Event()
    lock = threading.Lock()

    def work(t: int) -> None:
        after_kill = 0
        i = 0
        while after_kill < 50:
            content = f"t{t}-{i}"
            i += 1
            try:
                db.append_message("s", "user", content)
                with lock:
                    acknowledged.append(content)
                if killed.is_set():
                    after_kill += 1
            except UnavailableError:
                unknown.append(content)
            except Exception as err:
                other.append(err)
                return

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for thread in threads:
        thread.start()
    while len(acknowledged) < 200 and not other:
        time.sleep(0.01)
    os.kill(first_pid, signal.SIGKILL)
    killed.set()
    for thread in threads:
        thread.join()
    assert other == []
    second_pid = db._connected(10 ** 9).hello["pid"]
    assert second_pid != first_pid  # autostart brought up a new daemon
    stored = [row[0] for row in run_sql(autostarted, "SELECT content FROM messages")]
    assert set(acknowledged) <= set(stored)
    assert len(stored) == len(set(stored))  # nothing applied twice
    assert set(stored) <= set(acknowledged) | set(unknown)
    assert db.message_count(session_id="s") == len(stored)
    db.close()


def flaky_daemon(tmp: Path, drop_op: str) -> FakeDaemon:
    """Answers hello and everything else, but the first `drop_op` closes the connection instead."""
    database = real_database_path(tmp / "state.db")
    state = {"dropped": False}
    fake: FakeDaemon

    def answer(request):
        if request["op"] == "hello":
            return hello_ok(database)
        if request["op"] == drop_op and not state["dropped"]:
            state["dropped"] = True
            # A snapshot: the client reconnects as soon as its connection closes, and the new
            # connection must not be appended to the list this loop is walking and shut too.
            for conn in fake.connections_seen():
                conn.shutdown(2)
            return None
        return {"ok": True, "result": {"answered": request["op"]}}

    fake = FakeDaemon(str(tmp / "state.db.sock"), answer)
    return fake


def test_a_read_in_flight_when_the_connection_drops_is_retried_once(tmp: Path):
    fake = flaky_daemon(tmp, "getSession")
    try:
        with SessionDB(tmp / "state.db", autostart=False) as db:
            assert db.get_session("s") == {"answered": "getSession"}
        assert [r["op"] for r in fake.requests].count("getSession") == 2
    finally:
        fake.close()


def sent_keys(fake: FakeDaemon, op: str) -> List[str]:
    return [r.get("idempotencyKey") for r in fake.requests if r["op"] == op]


def test_a_write_in_flight_when_the_connection_drops_is_resent_with_its_key(tmp: Path):
    fake = flaky_daemon(tmp, "appendMessage")
    try:
        with SessionDB(tmp / "state.db", autostart=False) as db:
            assert db.append_message("s", "user", "once") == {"answered": "appendMessage"}
            assert db.session_count() == {"answered": "sessionCount"}
        keys = sent_keys(fake, "appendMessage")
        assert len(keys) == 2 and keys[0] == keys[1] and keys[0].startswith("auto-")
    finally:
        fake.close()


def test_async_read_retried_and_write_resent_with_its_key(tmp: Path):
    import asyncio

    fake = flaky_daemon(tmp, "appendMessage")

    async def main():
        async with AsyncSessionDB(tmp / "state.db", autostart=False) as db:
            assert await db.append_message("s", "user", "once", idempotency_key="mine") == {"answered": "appendMessage"}
            assert await db.get_session("s") == {"answered": "getSession"}

    try:
        asyncio.run(main())
        assert sent_keys(fake, "appendMessage") == ["mine", "mine"]
    finally:
        fake.close()


def daemon_files(db: Path) -> List[str]:
    """The files a daemon leaves beside the database while it runs (its socket, the WAL and its index)."""
    return [str(db) + suffix for suffix in (".sock", "-wal", "-shm")]


@pytest.mark.parametrize("cls", ["sync", "asyncio"])
def test_an_autostarted_daemon_leaves_once_its_last_client_closed_checkpointed_and_intact(tmp: Path, bin_env: Path, cls: str):
    db = tmp / "state.db"
    if cls == "sync":
        handle = SessionDB(db, autostart_idle_exit=1)
        pid = handle._connected(10 ** 9).hello["pid"]
        handle.create_session("s", "cli")
        for i in range(20):
            handle.append_message("s", "user", f"message {i}")
    else:
        import asyncio

        async def use() -> int:
            async with AsyncSessionDB(db, autostart_idle_exit=1) as adb:
                await adb.create_session("s", "cli")
                for i in range(20):
                    await adb.append_message("s", "user", f"message {i}")
                return (await adb._connected(time.monotonic() + 30)).hello["pid"]
        pid = asyncio.run(use())
        handle = None
    try:
        cmdline = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
        assert cmdline[-3:-1] == [b"--idle-exit", b"1"]
        if handle is not None:
            wait_for_uptime(handle, 2.5)  # over two idle spells with a client connected: it stays
            assert process_running(pid) and handle.message_count("s") == 20
            handle.close()
        give_up = time.monotonic() + 120  # a bound for a daemon that never leaves, not a speed target
        while process_running(pid):
            assert time.monotonic() < give_up, "the autostarted daemon did not exit"
            time.sleep(0.05)
    finally:
        if process_running(pid):
            os.kill(pid, signal.SIGKILL)
    log = (tmp / "state.db.daemon.log").read_text()
    assert "no client for 1 s (--idle-exit): stopping" in log and "stopped (checkpointed, socket removed)" in log
    assert [f for f in daemon_files(db) if os.path.exists(f)] == []
    assert run_sql(db, "PRAGMA integrity_check") == [("ok",)]
    assert run_sql(db, "SELECT COUNT(*) FROM messages WHERE session_id = 's'")[0][0] == 20


@pytest.mark.parametrize("value", ["0", "false", "False"])
def test_sessiondb_autostart_0_turns_autostart_off_whatever_the_code_asks(tmp: Path, bin_env: Path,
                                                                         monkeypatch: pytest.MonkeyPatch, value: str):
    monkeypatch.setenv("SESSIONDB_AUTOSTART", value)
    db = tmp / "state.db"
    with pytest.raises(UnavailableError, match="autostart is off \\(SESSIONDB_AUTOSTART\\)"):
        SessionDB(db, autostart=True)
    import asyncio

    async def use() -> None:
        async with AsyncSessionDB(db, autostart=True) as adb:
            await adb.session_count()
    with pytest.raises(UnavailableError, match="SESSIONDB_AUTOSTART"):
        asyncio.run(use())
    assert daemon_pids(db) == []
    assert not os.path.exists(f"{db}.sock") and not os.path.exists(tmp / "state.db.daemon.log")


def test_autostart_idle_exit_must_be_a_positive_number_of_seconds(tmp: Path):
    from sessiondb import InvalidArgumentError
    for bad in (0, -1, float("nan"), float("inf"), "30", True):
        with pytest.raises(InvalidArgumentError):
            SessionDB(tmp / "state.db", autostart_idle_exit=bad)

"""Fixtures: a short temp dir per test, the repository's built CLI as the daemon (through a
wrapper script that $SESSIONDB_BIN points at), and a running daemon for a fresh database: the
tests about the store's behaviour run once over SQLite and once over PostgreSQL (`engine`)."""
from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator, List, Optional, Union

import pytest

REPO = Path(__file__).resolve().parents[2]
CLI = REPO / "dist" / "src" / "cli" / "main.js"
sys.path.insert(0, str(REPO / "python"))

from postgres_server import PgServer, run_psql  # noqa: E402
from sessiondb import SessionDB  # noqa: E402
from sessiondb.paths import default_socket_path  # noqa: E402
from sessiondb.pg_url import is_postgres_url  # noqa: E402

# A database: a SQLite file's path, or a PostgreSQL database's URL.
Location = Union[Path, str]
ENGINES = ["sqlite", "postgres"]
# For a test about SQLite itself (its file, a second sqlite3 writer): overrides `engine`.
sqlite_only = pytest.mark.parametrize("engine", ["sqlite"])


def pytest_configure(config: pytest.Config) -> None:
    if not CLI.exists():
        raise pytest.UsageError(f"{CLI} is missing: run `npm run build` first")


@pytest.fixture
def tmp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    # Short paths: the socket beside the database must fit in 107 bytes.
    path = Path(tempfile.mkdtemp(prefix="sdb-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def bin_env(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """$SESSIONDB_BIN: a wrapper running this repository's CLI."""
    wrapper = tmp / "sessiondb-bin"
    wrapper.write_text(f'#!/bin/sh\nexec "{shutil.which("node")}" "{CLI}" "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv("SESSIONDB_BIN", str(wrapper))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp / "run"))
    return wrapper


class Daemon:
    """A `sessiondb serve` child of the test, for one database (its output in ``log``, by default
    beside the file)."""

    def __init__(self, db: Location, extra: List[str], log: Optional[Path] = None) -> None:
        self.db = db
        self.socket = default_socket_path(db)
        self.log = open(log or db.parent / f"{db.name}.serve.log", "ab")
        self.process = subprocess.Popen(
            ["node", str(CLI), "serve", "--db", str(db), "--readers", "2", *extra],
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log,
        )
        wait_for_daemon(db, self.socket, self.process)

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()
        self.log.close()


def wait_for_daemon(db: Location, socket_path: str, process: "subprocess.Popen[bytes]") -> None:
    # Polls for the daemon's hello: no fixed sleep, and a daemon that dies fails the test at once.
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"the daemon exited with {process.returncode}")
        try:
            SessionDB(db, socket_path=socket_path, autostart=False, timeout=60).close()
            return
        except Exception:
            time.sleep(0.05)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    """One PostgreSQL server for the whole run, started by the first test that needs it. Without
    PostgreSQL's server binaries every PostgreSQL test fails saying so (CI installs them)."""
    server = PgServer.start(CLI)
    yield server
    server.stop()


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def fresh_location(engine: str, tmp: Path, request: pytest.FixtureRequest) -> Location:
    """A new database of the test's engine: a file in its temp dir, or a database on the server."""
    if engine == "sqlite":
        return tmp / "state.db"
    return request.getfixturevalue("pg_server").create_database()


def engine_of(location: Location) -> str:
    return "postgres" if is_postgres_url(str(location)) else "sqlite"


@pytest.fixture
def start_daemon(tmp: Path, bin_env: Path) -> Iterator:
    started: List[Daemon] = []

    def start(db: Location = None, *extra: str) -> Daemon:
        db = db or tmp / "state.db"
        daemon = Daemon(db, list(extra), tmp / f"serve-{len(started)}.log" if isinstance(db, str) else None)
        started.append(daemon)
        return daemon

    yield start
    for daemon in started:
        daemon.stop()


@pytest.fixture
def daemon(start_daemon, fresh_location: Location) -> Daemon:
    """A daemon of its own for the test, on a fresh database of the test's engine."""
    return start_daemon(fresh_location)


@pytest.fixture
def db(daemon: Daemon) -> Iterator[SessionDB]:
    handle = SessionDB(daemon.db, autostart=False)
    yield handle
    handle.close()


def run_sql(db: Location, statement: str, params: tuple = ()) -> list:
    """A write or read on the database beside the daemon (as a bypassing process): plain sqlite3
    on a file, psql on a PostgreSQL URL (``?`` placeholders either way; rows of text from psql).
    Several statements without parameters run as one script (one psql process)."""
    if is_postgres_url(str(db)):
        pieces = statement.split("?")
        assert len(pieces) == len(params) + 1, statement
        sql = pieces[0] + "".join(pg_literal(value) + piece for value, piece in zip(params, pieces[1:]))
        output = run_psql(None, str(db), sql)
        return [tuple(line.split("|")) for line in output.splitlines()]
    import sqlite3

    connection = sqlite3.connect(str(db), timeout=30, isolation_level=None)
    try:
        if ";" in statement:  # several statements, no parameters
            assert not params, statement
            connection.executescript(statement)
            return []
        return connection.execute(statement, params).fetchall()
    finally:
        connection.close()


# How long a state may take to come: a bound for one that never does, not a speed target.
WAIT_LIMIT_S = 120


def wait_until(what: str, condition) -> None:
    """Polls for a state, not a time: fails naming it only past a generous bound."""
    until = time.monotonic() + WAIT_LIMIT_S
    while not condition():
        if time.monotonic() > until:
            raise AssertionError(f"still waiting after {WAIT_LIMIT_S} s for {what}")
        time.sleep(0.01)


def wait_until_steady(what: str, read, steady_s: float = 0.5):
    """Polls ``read()`` until its value has not changed for ``steady_s`` and returns it: the wait
    for an absence of progress (a producer that stopped). One still going, however slowly, keeps
    it waiting up to the bound."""
    until = time.monotonic() + WAIT_LIMIT_S
    value, since = read(), time.monotonic()
    while True:
        time.sleep(0.025)
        now = read()
        if now != value:
            value, since = now, time.monotonic()
        elif time.monotonic() - since >= steady_s:
            return value
        if time.monotonic() > until:
            raise AssertionError(f"still waiting after {WAIT_LIMIT_S} s for {what} to settle (last {value!r})")


def wait_for_uptime(db, seconds: float) -> None:
    """Waits until the daemon serving ``db`` (a sync handle whose connection stays open) has been
    up ``seconds`` by its own clock: a spell it timed from its start has then passed on its side,
    however late this process's own sleeps run."""
    wait_until(f"the daemon up {seconds} s", lambda: db._call("stats", [])["uptimeS"] >= seconds)


def pg_literal(value: object) -> str:
    """A test's parameter as an SQL literal for psql (standard_conforming_strings is on)."""
    if value is None:
        return "NULL"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return repr(value)
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    raise TypeError(f"no SQL literal for {value!r}")


class AsyncFacade:
    """Runs an AsyncSessionDB's coroutines on a loop of its own thread, so every contract test
    runs against both classes."""

    def __init__(self, *args, **kwargs) -> None:
        import asyncio
        import threading

        from sessiondb import AsyncSessionDB

        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self.inner = AsyncSessionDB(*args, **kwargs)
        self._run(self.inner.connect())

    def _run(self, coroutine):
        import asyncio

        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result()

    def __getattr__(self, name: str):
        import inspect

        attr = getattr(self.inner, name)
        if name == "iter_export_all":
            def iterate(*args, **kwargs):
                agen = attr(*args, **kwargs)
                try:
                    while True:
                        try:
                            yield self._run(agen.__anext__())
                        except StopAsyncIteration:
                            return
                finally:
                    self._run(agen.aclose())
            return iterate
        if inspect.iscoroutinefunction(attr):
            return lambda *args, **kwargs: self._run(attr(*args, **kwargs))
        return attr

    def close(self) -> None:
        self._run(self.inner.close())

    def shutdown(self) -> None:
        self._run(self.inner.close())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()


@pytest.fixture(scope="session", params=ENGINES)
def shared_daemon(request: pytest.FixtureRequest) -> Iterator[Daemon]:
    """One daemon per engine for the contract tests (each test empties the database first): a
    daemon per test would spend most of the suite starting Node."""
    directory = Path(tempfile.mkdtemp(prefix="sdb-c-", dir="/tmp"))
    if request.param == "sqlite":
        daemon = Daemon(directory / "state.db", [])
    else:
        daemon = Daemon(request.getfixturevalue("pg_server").create_database(), [], directory / "serve.log")
    yield daemon
    daemon.stop()
    shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(params=["sync", "async"])
def store(request: pytest.FixtureRequest, shared_daemon: Daemon):
    run_sql(shared_daemon.db, "DELETE FROM messages; DELETE FROM sessions")
    handle = (SessionDB if request.param == "sync" else AsyncFacade)(shared_daemon.db, autostart=False)
    yield handle
    if request.param == "sync":
        handle.close()
    else:
        handle.shutdown()

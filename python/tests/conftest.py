"""Fixtures: a short temp dir per test, the repository's built CLI as the daemon (through a
wrapper script that $SESSIONDB_BIN points at), and a running daemon for a fresh file."""
from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator, List

import pytest

REPO = Path(__file__).resolve().parents[2]
CLI = REPO / "dist" / "src" / "cli" / "main.js"
sys.path.insert(0, str(REPO / "python"))

from sessiondb import SessionDB  # noqa: E402
from sessiondb.paths import default_socket_path  # noqa: E402


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
    """A `sessiondb serve` child of the test, for one database file."""

    def __init__(self, db: Path, extra: List[str]) -> None:
        self.db = db
        self.socket = default_socket_path(db)
        self.log = open(db.parent / f"{db.name}.serve.log", "ab")
        self.process = subprocess.Popen(
            ["node", str(CLI), "serve", "--db", str(db), "--readers", "2", *extra],
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log,
        )
        wait_for_daemon(self.socket, self.process)

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


def wait_for_daemon(socket_path: str, process: "subprocess.Popen[bytes]") -> None:
    # Polls for the daemon's hello: no fixed sleep, and a daemon that dies fails the test at once.
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"the daemon exited with {process.returncode}")
        try:
            SessionDB(Path(socket_path[:-5]), socket_path=socket_path, autostart=False, timeout=60).close()
            return
        except Exception:
            time.sleep(0.05)


@pytest.fixture
def start_daemon(tmp: Path, bin_env: Path) -> Iterator:
    started: List[Daemon] = []

    def start(db: Path = None, *extra: str) -> Daemon:
        daemon = Daemon(db or tmp / "state.db", list(extra))
        started.append(daemon)
        return daemon

    yield start
    for daemon in started:
        daemon.stop()


@pytest.fixture
def daemon(start_daemon) -> Daemon:
    return start_daemon()


@pytest.fixture
def db(daemon: Daemon) -> Iterator[SessionDB]:
    handle = SessionDB(daemon.db, autostart=False)
    yield handle
    handle.close()


def run_sql(db: Path, statement: str, params: tuple = ()) -> list:
    """A plain sqlite3 write or read on the file, beside the daemon (as a bypassing process)."""
    import sqlite3

    connection = sqlite3.connect(str(db), timeout=30, isolation_level=None)
    try:
        return connection.execute(statement, params).fetchall()
    finally:
        connection.close()


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


@pytest.fixture(scope="session")
def shared_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    """One daemon for the contract tests (each test empties the file first): a daemon per test
    would spend most of the suite starting Node."""
    directory = Path(tempfile.mkdtemp(prefix="sdb-c-", dir="/tmp"))
    daemon = Daemon(directory / "state.db", [])
    yield daemon
    daemon.stop()
    shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(params=["sync", "async"])
def store(request: pytest.FixtureRequest, shared_daemon: Daemon):
    run_sql(shared_daemon.db, "DELETE FROM messages")
    run_sql(shared_daemon.db, "DELETE FROM sessions")
    handle = (SessionDB if request.param == "sync" else AsyncFacade)(shared_daemon.db, autostart=False)
    yield handle
    if request.param == "sync":
        handle.close()
    else:
        handle.shutdown()

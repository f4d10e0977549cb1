"""A daemon on PostgreSQL under load from Python clients while PostgreSQL goes away (issue 23,
item 2): every sessiondb connection terminated, ``pg_ctl restart -m fast``, a
``statement_timeout`` firing. The same daemon process keeps serving; every acknowledged append
is there exactly once, one whose outcome is unknown at most once, one answered "not applied"
not at all. The server is this module's own: a restart must not disturb the other tests'."""
from __future__ import annotations

import subprocess
import threading
from typing import Dict, Iterator, List, Set

import pytest

from conftest import CLI, WAIT_LIMIT_S, wait_until
from postgres_server import PgServer, postgres_bin_dir
from sessiondb import SessionDB
from sessiondb.errors import SessionDBError

# Every connection sessiondb holds to the test's database (its daemon names them "sessiondb …").
TERMINATE = """SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity
  WHERE datname = current_database() AND application_name LIKE 'sessiondb %') t"""
LOCKED = """SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
  WHERE c.relname = 'messages' AND l.mode = 'AccessExclusiveLock' AND l.granted"""


@pytest.fixture(scope="module")
def own_server() -> Iterator[PgServer]:
    server = PgServer.start(CLI)
    yield server
    server.stop()


class Load:
    """Appending threads and a reading thread on one session, recording what each append was told."""

    def __init__(self, db: SessionDB, session_id: str, writers: int) -> None:
        self.acked: Set[str] = set()
        self.unknown: Set[str] = set()
        self.not_applied: Dict[str, str] = {}
        self.codes: Dict[str, int] = {}
        self.reads = 0
        self.messages: Dict[str, str] = {}  # one message per code, to say what an unexpected one was
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._append, args=(db, session_id, w)) for w in range(writers)]
        self._threads.append(threading.Thread(target=self._read, args=(db, session_id)))
        for thread in self._threads:
            thread.start()

    def _count(self, code: str) -> None:
        with self._lock:
            self.codes[code] = self.codes.get(code, 0) + 1

    def _append(self, db: SessionDB, session_id: str, w: int) -> None:
        i = 0
        while not self._stop.is_set():
            content = f"py-{w}-{i}"
            i += 1
            try:
                db.append_message(session_id, "user", content)
                with self._lock:
                    self.acked.add(content)
            except SessionDBError as err:
                self._count(err.code)
                self.messages.setdefault(err.code, err.message)
                with self._lock:
                    if err.code == "OUTCOME_UNKNOWN":
                        self.unknown.add(content)
                    else:
                        self.not_applied[content] = err.code

    def _read(self, db: SessionDB, session_id: str) -> None:
        while not self._stop.is_set():
            for read in (lambda: db.get_session(session_id), lambda: db.search_messages("py")):
                try:
                    read()
                except SessionDBError as err:
                    self._count(f"read {err.code}")
                    self.messages.setdefault(f"read {err.code}", err.message)
            self.reads += 1

    def more_acked(self, what: str) -> None:
        before = len(self.acked)
        wait_until(f"appends acknowledged again after {what} ({self.codes})", lambda: len(self.acked) >= before + 30)

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join()


def test_a_postgres_daemon_survives_terminated_connections_a_restart_and_a_statement_timeout(own_server: PgServer, start_daemon):
    url = own_server.create_database()
    name = url.split("///", 1)[1].split("?", 1)[0]
    daemon = start_daemon(url)
    db = SessionDB(url, autostart=False)
    try:
        db.create_session("s", "cli")
        load = Load(db, "s", 3)
        try:
            load.more_acked("the start")

            assert int(own_server.psql(url, TERMINATE)) > 0
            load.more_acked("pg_terminate_backend")

            own_server.restart()
            load.more_acked("pg_ctl restart -m fast")

            own_server.psql(url, f"ALTER DATABASE {name} SET statement_timeout = '200ms'")
            own_server.psql(url, TERMINATE)  # new connections take the database's setting
            holder = subprocess.Popen([str(postgres_bin_dir() / "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", url],
                                      stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
            try:
                assert holder.stdin is not None
                holder.stdin.write("SET statement_timeout = 0;\nBEGIN;\nLOCK TABLE messages IN ACCESS EXCLUSIVE MODE;\n")
                holder.stdin.flush()
                wait_until("the lock on messages", lambda: int(own_server.psql(url, LOCKED)) > 0)
                busy = load.codes.get("BUSY", 0)
                # Appends wait on the lock until the statement timeout cancels them: BUSY, not applied.
                wait_until("a statement timeout to fail an append", lambda: load.codes.get("BUSY", 0) > busy)
                holder.stdin.write("COMMIT;\n")
                holder.stdin.close()
                assert holder.wait(timeout=WAIT_LIMIT_S) == 0
            finally:
                if holder.poll() is None:
                    holder.kill()
            own_server.psql(url, f"ALTER DATABASE {name} RESET statement_timeout")
            load.more_acked("statement_timeout")
        finally:
            load.stop()

        # The same daemon process serves afterwards.
        assert daemon.process.poll() is None
        db.append_message("s", "user", "last")
        load.acked.add("last")

        rows = own_server.psql(url, "SELECT content || '|' || count(*) FROM messages WHERE session_id = 's' GROUP BY content")
        present: Dict[str, int] = {}
        for line in rows.splitlines():
            content, n = line.rsplit("|", 1)
            present[content] = int(n)
        missing_or_doubled: List[str] = [c for c in load.acked if present.get(c) != 1]
        assert missing_or_doubled == []
        assert [c for c in load.unknown if present.get(c, 0) > 1] == []
        assert [c for c in load.not_applied if c in present] == []
        assert [c for c in present if c not in load.acked and c not in load.unknown] == []
        assert db.get_session("s")["message_count"] == sum(present.values())
        assert load.reads > 0
        documented = {"BUSY", "OUTCOME_UNKNOWN", "UNAVAILABLE", "TIMEOUT", "read BUSY", "read UNAVAILABLE"}
        assert set(load.codes) <= documented, load.messages
    finally:
        db.close()

"""One writer per file by every name, whatever is deleted (issue 23), and stale lock files removed
(issue 30): the runtime folder and the socket and lock file beside the database are removed while
a daemon serves ``a/state.db`` under load; a Python client with autostart then opens the same file
by a hard link ``b/hard.db``. The daemon is paused meanwhile, so only the guard on the file itself
can tell the client a daemon holds it: it must wait for that daemon instead of starting a second
one on the same inode (before: a "malformed" file, 340 of 2,123 acknowledged rows left)."""
from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import threading
import time
from pathlib import Path
from typing import Dict, List

from conftest import run_sql
from sessiondb import SessionDB
from sessiondb.file_guard import daemon_holds
from sessiondb.paths import identity_lock_path, identity_socket_path
from test_autostart import daemon_pids

# How long the writers append once all run: a duration of load, not a timed assertion.
LOAD_S = 2.0
# A chance for a client that would wrongly start a second daemon to do so while the first is paused.
PAUSE_S = 1.0


class Writer(threading.Thread):
    """Appends ``<tag> n<seq>`` messages until told to stop; remembers every acknowledged one."""

    def __init__(self, db_path: Path, tag: str, stop: threading.Event, autostart: bool) -> None:
        super().__init__(daemon=True)
        self.db_path, self.tag, self.stop, self.autostart = db_path, tag, stop, autostart
        self.acked: List[str] = []
        self.errors: List[str] = []
        self.opened = threading.Event()
        self.daemon_pid = None

    def run(self) -> None:
        try:
            with SessionDB(self.db_path, autostart=self.autostart, timeout=60) as db:
                self.daemon_pid = db._connected(time.monotonic() + 60).hello["pid"]
                self.opened.set()
                db.create_session(self.tag, "load")
                seq = 0
                while not self.stop.is_set():
                    content = f"{self.tag} n{seq}"
                    db.append_message(self.tag, "user", content)
                    self.acked.append(content)
                    seq += 1
        except Exception as err:  # reported by the test
            self.errors.append(repr(err))
        finally:
            self.opened.set()


def test_runtime_folder_removed_python_autostart_by_a_hard_link_waits_for_the_daemon(start_daemon, tmp: Path):
    (tmp / "a").mkdir()
    (tmp / "b").mkdir()
    served, hard = tmp / "a" / "state.db", tmp / "b" / "hard.db"
    daemon = start_daemon(served)
    os.link(served, hard)
    runtime = Path(os.environ["XDG_RUNTIME_DIR"]) / "sessiondb"
    identity_socket = identity_socket_path(str(served))
    assert identity_socket is not None and os.path.exists(identity_socket)
    assert daemon_holds(str(hard)), "the daemon's guard is on the file, seen through any name"

    stop = threading.Event()
    writers = [Writer(served, f"served{i}", stop, autostart=False) for i in range(3)]
    for writer in writers:
        writer.start()
    for writer in writers:
        assert writer.opened.wait(60) and not writer.errors, writer.errors

    daemon.process.send_signal(signal.SIGSTOP)
    try:
        shutil.rmtree(runtime)
        os.unlink(f"{served}.sock")
        os.unlink(f"{served}.daemon-lock")
        through_link = [Writer(hard, f"hard{i}", stop, autostart=True) for i in range(2)]
        for writer in through_link:
            writer.start()
        time.sleep(PAUSE_S)
        assert not any(w.opened.is_set() for w in through_link), [w.errors for w in through_link]
        assert daemon_pids(hard) == [], "autostart started a second daemon on the same file"
    finally:
        daemon.process.send_signal(signal.SIGCONT)
    for writer in through_link:
        assert writer.opened.wait(60) and not writer.errors, writer.errors
    time.sleep(LOAD_S)
    stop.set()
    everyone = writers + through_link
    for writer in everyone:
        writer.join(60)
        assert not writer.errors, (writer.tag, writer.errors)
        assert writer.acked, f"{writer.tag} wrote nothing"

    assert {w.daemon_pid for w in everyone} == {daemon.process.pid}, "every writer was served by the one daemon"
    assert daemon_pids(hard) == []
    assert sorted(os.listdir(tmp / "b")) == ["hard.db"], "nothing was made beside the hard link (no -wal, no socket)"
    # The daemon made its sockets and lock file again by itself.
    assert os.path.exists(identity_socket) and os.path.exists(f"{served}.sock") and os.path.exists(f"{served}.daemon-lock")
    daemon.stop()
    assert daemon.process.returncode == 0

    assert run_sql(served, "PRAGMA integrity_check") == [("ok",)]
    stored: Dict[str, int] = {}
    for (content,) in run_sql(served, "SELECT content FROM messages"):
        stored[content] = stored.get(content, 0) + 1
    acked = [content for writer in everyone for content in writer.acked]
    missing = [content for content in acked if stored.get(content) != 1]
    assert missing == [], f"{len(missing)} of {len(acked)} acknowledged appends missing or doubled"


def test_stale_lock_files_of_a_dead_daemon_are_removed_by_the_next_client(start_daemon, tmp: Path):
    db_path = tmp / "state.db"
    daemon = start_daemon(db_path)
    # What an earlier version left in the runtime folder: a lock under the file's identity.
    legacy = identity_lock_path(str(db_path))
    assert legacy is not None
    connection = sqlite3.connect(legacy)
    connection.execute("CREATE TABLE daemon (pid INTEGER)")
    connection.close()
    daemon.kill()  # kill -9: its lock file beside the database stays behind
    beside = f"{db_path}.daemon-lock"
    assert os.path.exists(beside) and os.path.exists(legacy)
    assert not daemon_holds(str(db_path)), "the kernel dropped the dead daemon's guard"

    try:
        SessionDB(db_path, autostart=False)
    except Exception:
        pass  # no daemon: UNAVAILABLE, as always
    assert not os.path.exists(beside), "the dead daemon's lock file was left"
    assert not os.path.exists(legacy), "the stale identity lock was left"

    # A live daemon's lock file is never removed.
    daemon = start_daemon(db_path)
    held = f"{db_path}.daemon-lock"
    from sessiondb.file_guard import remove_stale_lock

    assert not remove_stale_lock(held)
    assert os.path.exists(held)


def test_conn_through_a_hard_link_writes_under_the_daemons_name(start_daemon, tmp: Path):
    daemon = start_daemon(tmp / "state.db")
    hard = tmp / "hard.db"
    os.link(daemon.db, hard)
    with SessionDB(hard, autostart=False) as db:
        db.create_session("s", "cli")
        db._conn.execute("UPDATE sessions SET title = 'through _conn' WHERE id = 's'")
        assert db.get_session("s")["title"] == "through _conn"
    assert not os.path.exists(f"{hard}-wal"), "_conn wrote the file under the hard link's name: a second WAL"


def test_autostart_leaves_no_lock_file_behind(tmp: Path, bin_env: Path):
    from test_autostart import stop_daemon

    db_path = tmp / "state.db"
    try:
        with SessionDB(db_path) as db:
            db.create_session("s", "cli")
        assert not os.path.exists(f"{db_path}.autostart-lock")
    finally:
        stop_daemon(db_path)

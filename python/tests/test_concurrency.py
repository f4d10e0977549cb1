"""Threads through one SessionDB (over each engine), and another Python process writing the SQLite
file directly beside the daemon with the reference's BEGIN IMMEDIATE and jittered retry."""
from __future__ import annotations

import random
import sqlite3
import threading
import time
from pathlib import Path

from conftest import run_sql, sqlite_only
from sessiondb import SessionDB

THREADS = 16
APPENDS = 500


def test_16_threads_append_500_each_through_one_instance_and_the_daemon_batches_them(db: SessionDB):
    for t in range(THREADS):
        db.create_session(f"t{t}", "cli")
    ids = [[] for _ in range(THREADS)]
    errors = []
    start = threading.Barrier(THREADS)

    def work(t: int) -> None:
        try:
            start.wait()
            for i in range(APPENDS):
                ids[t].append(db.append_message(f"t{t}", "user", f"thread {t} message {i}"))
        except Exception as err:  # reported below, with the thread's number
            errors.append((t, err))

    threads = [threading.Thread(target=work, args=(t,)) for t in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    every = [i for per_thread in ids for i in per_thread]
    assert len(every) == THREADS * APPENDS and len(set(every)) == THREADS * APPENDS
    assert db.message_count() == THREADS * APPENDS
    for t in range(THREADS):
        assert db.get_session(f"t{t}")["message_count"] == APPENDS
        assert ids[t] == sorted(ids[t])  # one thread's appends commit in its order
    stats = db._call("stats", [])
    assert stats["writer"]["maxBatchSize"] > 1


def direct_write(path: Path, statements, stop_after_s: float = 20.0) -> int:
    """The reference's write path: BEGIN IMMEDIATE, on "locked" roll back, sleep 20-150 ms, retry."""
    connection = sqlite3.connect(str(path), timeout=1.0, isolation_level=None)
    attempts = 0
    give_up = time.monotonic() + stop_after_s
    try:
        while True:
            attempts += 1
            try:
                connection.execute("BEGIN IMMEDIATE")
                for sql, params in statements:
                    connection.execute(sql, params)
                connection.execute("COMMIT")
                return attempts
            except sqlite3.OperationalError as err:
                if connection.in_transaction:
                    connection.execute("ROLLBACK")
                if "locked" not in str(err).lower() or time.monotonic() > give_up:
                    raise
                time.sleep(random.uniform(0.02, 0.15))
    finally:
        connection.close()


@sqlite_only  # the reference's own writer opens the SQLite file
def test_a_second_python_writer_on_the_same_file_at_the_same_time(db: SessionDB):
    path = db.db_path
    db.create_session("daemon-side", "cli")
    direct_write(path, [("INSERT INTO sessions (id, source, started_at) VALUES (?, ?, ?)",
                         ("direct-side", "cli", time.time()))])
    daemon_ids, errors = [], []

    def via_daemon() -> None:
        try:
            for i in range(300):
                daemon_ids.append(db.append_message("daemon-side", "user", f"daemon {i}"))
        except Exception as err:
            errors.append(err)

    def direct() -> None:
        try:
            for i in range(150):
                direct_write(path, [
                    ("INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, ?, ?, ?)",
                     ("direct-side", "user", f"direct {i}", time.time())),
                    ("UPDATE sessions SET message_count = message_count + 1 WHERE id = ?", ("direct-side",)),
                ])
        except Exception as err:
            errors.append(err)

    threads = [threading.Thread(target=via_daemon), threading.Thread(target=via_daemon),
               threading.Thread(target=direct)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(daemon_ids) == 600 and len(set(daemon_ids)) == 600
    assert db.get_session("daemon-side")["message_count"] == 600
    assert db.get_session("direct-side")["message_count"] == 150
    assert run_sql(path, "SELECT COUNT(*) FROM messages")[0][0] == 750
    assert len(db.search_messages("direct", limit=1000)) == 150  # the FTS triggers ran for both

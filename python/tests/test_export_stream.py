"""iter_export_all streams with constant memory: while its consumer stalls, the client stops
reading the socket and so the daemon stops producing pages."""
from __future__ import annotations

import sqlite3
import time

from sessiondb import SessionDB

SESSIONS = 4000
MESSAGES_EACH = 1


def fill(path) -> None:
    """4,000 sessions of one 4,000-byte message (about 16 MB, 20 pages), in one transaction."""
    connection = sqlite3.connect(str(path), isolation_level=None)
    connection.execute("BEGIN IMMEDIATE")
    text = "x" * 4000
    for i in range(SESSIONS):
        connection.execute("INSERT INTO sessions (id, source, started_at, message_count) VALUES (?, 'cli', ?, ?)",
                           (f"s{i:05d}", 1000.0 + i, MESSAGES_EACH))
        connection.executemany("INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, 'user', ?, ?)",
                               [(f"s{i:05d}", text, 1000.0 + i) for _ in range(MESSAGES_EACH)])
    connection.execute("COMMIT")
    connection.close()


def pages_read(db: SessionDB) -> int:
    return db._call("stats", "read", [])["readers"]["completed"]


def test_the_daemon_stops_producing_pages_while_the_consumer_stalls(db: SessionDB):
    fill(db.db_path)
    before = pages_read(db)
    stream = db.iter_export_all()
    first = next(stream)
    assert first["id"] == f"s{SESSIONS - 1:05d}" and len(first["messages"]) == MESSAGES_EACH
    time.sleep(1.0)  # the stall; the assertion below is an upper bound, whatever the machine's speed
    while_stalled = pages_read(db) - before
    rest = sum(1 for _ in stream)
    in_all = pages_read(db) - before
    assert rest == SESSIONS - 1
    assert in_all >= 20, f"the export took {in_all} pages"
    assert while_stalled < in_all / 2, f"{while_stalled} of {in_all} pages were produced while the consumer stalled"

"""iter_export_all streams with constant memory: while its consumer stalls, the client stops
reading the socket and so the daemon stops producing pages (over each engine)."""
from __future__ import annotations

from conftest import run_sql, wait_until_steady
from sessiondb import SessionDB

SESSIONS = 4000


def fill(db: SessionDB, sessions: int = SESSIONS, size: int = 4000) -> None:
    """`sessions` sessions of one `size`-byte message (by default about 16 MB, 20 pages), written
    beside the daemon, in SQL both engines run."""
    numbers = f"WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < {sessions - 1}) "
    run_sql(db.db_path, numbers + "INSERT INTO sessions (id, source, started_at, message_count) "
            "SELECT 's' || i, 'cli', 1000.0 + i, 1 FROM n")
    run_sql(db.db_path, numbers + "INSERT INTO messages (session_id, role, content, timestamp) "
            "SELECT 's' || i, 'user', ?, 1000.0 + i FROM n", ("x" * size,))


def pages_read(db: SessionDB) -> int:
    return db._call("stats", [])["readers"]["completed"]


def test_the_daemon_stops_producing_pages_while_the_consumer_stalls(db: SessionDB):
    fill(db)
    before = pages_read(db)
    stream = db.iter_export_all()
    first = next(stream)
    assert first["id"] == f"s{SESSIONS - 1}" and len(first["messages"]) == 1
    # The stall: until the daemon has stopped producing pages (held back by the full socket), or
    # has produced them all (the client kept reading: the assertion below fails).
    while_stalled = wait_until_steady("the pages produced while the consumer stalls", lambda: pages_read(db)) - before
    rest = sum(1 for _ in stream)
    in_all = pages_read(db) - before
    assert rest == SESSIONS - 1
    assert in_all >= 20, f"the export took {in_all} pages"
    assert while_stalled < in_all / 2, f"{while_stalled} of {in_all} pages were produced while the consumer stalled"


def test_an_export_is_one_snapshot_while_others_write(db: SessionDB):
    """Issue 23 item 3: rows written after the export began (an append to a session on its last
    page, a new old-dated session, a deletion) are not in it, and each session's counters match
    its exported messages (over each engine)."""
    # 1,500 sessions of 2,000 bytes (8 pages): more than the socket and the client hold.
    fill(db, 1500, 2000)
    stream = db.iter_export_all()
    first = next(stream)
    run_sql(db.db_path, "INSERT INTO messages (session_id, role, content, tool_calls, timestamp) "
            "VALUES ('s0', 'assistant', 'late', '[{\"id\": 1}]', 5000.0)")
    run_sql(db.db_path, "UPDATE sessions SET message_count = message_count + 1, "
            "tool_call_count = tool_call_count + 1 WHERE id = 's0'")
    run_sql(db.db_path, "DELETE FROM messages WHERE session_id = 's1'")
    run_sql(db.db_path, "DELETE FROM sessions WHERE id = 's1'")
    run_sql(db.db_path, "INSERT INTO sessions (id, source, started_at, message_count) VALUES ('late', 'cli', 1.0, 0)")
    exported = {first["id"]: first}
    for item in stream:
        exported[item["id"]] = item
    assert len(exported) == 1500
    assert "late" not in exported
    assert "s1" in exported
    for session in exported.values():
        assert len(session["messages"]) == session["message_count"], session["id"]
    assert [m["content"] for m in exported["s0"]["messages"]] == ["x" * 2000]
    assert exported["s0"]["tool_call_count"] == 0
    assert db.export_session("s0")["message_count"] == 2

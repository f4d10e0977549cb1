"""Issue 30 item 2, the arguments the reference takes that the first pass still refused: token
counts that are not whole numbers, texts kept as text by ``col = ?``, bytes — stored as the
reference's own SQL stores them (compared with plain sqlite3 on a file of the same schema, value
and storage class) — and the two the client refuses on purpose: a ``None`` session id in
create_session / ensure_session and bytes for a TEXT column."""
from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from conftest import REPO, sqlite_only
from sessiondb import ConstraintError, InvalidArgumentError, SessionDB

SCHEMA_V6 = (REPO / "test" / "fixtures" / "schema-v6.sql").read_text()
COUNTERS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens")
STORED = "SELECT " + ", ".join(f"{c}, typeof({c})" for c in COUNTERS) + " FROM sessions WHERE id = ?"
# (kwargs, absolute): the counters the reference binds into `col + ?` or `col = ?`.
CALLS = [
    ({"input_tokens": 5.5, "output_tokens": "2.25", "cache_read_tokens": b"7", "reasoning_tokens": -0.5}, False),
    ({"input_tokens": 1, "output_tokens": 2.0, "cache_write_tokens": "3"}, False),
    ({"input_tokens": "abc", "output_tokens": 9.75, "cache_read_tokens": b"\x00\x01", "cache_write_tokens": "4.5",
      "reasoning_tokens": "12"}, True),
    ({"input_tokens": 0.5, "output_tokens": "x1"}, False),
]


def reference_update(conn: sqlite3.Connection, session_id: str, kwargs: dict, absolute: bool) -> None:
    """The counters of the reference's update_token_counts, bound by sqlite3 as it binds them."""
    values = [kwargs.get(c, 0) for c in COUNTERS]
    sets = ", ".join(f"{c} = ?" if absolute else f"{c} = {c} + ?" for c in COUNTERS)
    conn.execute(f"UPDATE sessions SET {sets} WHERE id = ?", (*values, session_id))


@sqlite_only
def test_odd_token_counts_are_stored_as_the_references_sql_stores_them(db: SessionDB, tmp: Path):
    reference = sqlite3.connect(str(tmp / "reference.db"), isolation_level=None)
    reference.executescript(SCHEMA_V6)
    expected = []
    got = []
    for n, (kwargs, absolute) in enumerate(CALLS):
        sid = f"s{n}"
        db.create_session(sid, "cli")
        reference.execute("INSERT INTO sessions (id, source, started_at) VALUES (?, 'cli', 1.0)", (sid,))
        # Twice: an addition onto what the first one stored (a REAL counter stays REAL).
        for _ in range(2):
            db.update_token_counts(sid, absolute=absolute, **kwargs)
            reference_update(reference, sid, kwargs, absolute)
        expected.append(tuple(reference.execute(STORED, (sid,)).fetchone()))
        got.append(tuple(db._conn.execute(STORED, (sid,)).fetchone()))
    reference.close()
    assert got == expected
    # The premise: the reference keeps fractions, texts and blobs in these INTEGER columns.
    assert expected[0][:4] == (11, "integer", 4.5, "real") and expected[2][:2] == ("abc", "text")
    assert expected[2][4:6] == (b"\x00\x01", "blob") and expected[2][6:8] == (4.5, "real")
    row = db.get_session("s0")
    assert row["output_tokens"] == 4.5 and row["reasoning_tokens"] == -1.0


@pytest.mark.parametrize("engine", ["postgres"])
def test_a_fractional_token_count_on_postgresql_is_refused_and_nothing_applied(db: SessionDB):
    db.create_session("s", "cli")
    db.update_token_counts("s", input_tokens=3)
    with pytest.raises(InvalidArgumentError) as caught:
        db.update_token_counts("s", input_tokens=2, output_tokens=5.5)
    assert "BIGINT" in str(caught.value) and "outputTokensBound" in str(caught.value)
    row = db.get_session("s")
    assert (row["input_tokens"], row["output_tokens"]) == (3, 0)


def test_a_none_session_id_is_refused_as_sqlite3_integrity_error(db: SessionDB):
    # The reference would insert a session whose id is NULL, unreachable by any later call.
    for call in (lambda: db.create_session(None, "cli"), lambda: db.ensure_session(None),
                 lambda: db.ensure_session(None, "cli", "m")):
        with pytest.raises(sqlite3.IntegrityError) as caught:
            call()
        assert isinstance(caught.value, ConstraintError) and "sessions.id" in str(caught.value)
    assert db.session_count() == 0


def test_bytes_for_a_text_column_are_refused_as_sqlite3_programming_error(db: SessionDB):
    db.create_session("s", "cli")
    for call in (lambda: db.append_message("s", "user", b"hello"), lambda: db.create_session(b"x", "cli"),
                 lambda: db.append_message("s", b"user", "x")):
        with pytest.raises(sqlite3.ProgrammingError) as caught:
            call()
        assert isinstance(caught.value, InvalidArgumentError) and "decode" in str(caught.value)
    assert db.message_count() == 0 and db.session_count() == 1


MESSAGE_COUNTS = "SELECT token_count, typeof(token_count) FROM messages ORDER BY id"


@sqlite_only
def test_odd_message_token_counts_are_stored_as_the_references_insert_stores_them(db: SessionDB, tmp: Path):
    values = [5.5, "abc", b"\x01", "7", 3.0, None, 12, "2.5"]
    reference = sqlite3.connect(str(tmp / "reference.db"), isolation_level=None)
    reference.executescript(SCHEMA_V6)
    reference.execute("INSERT INTO sessions (id, source, started_at) VALUES ('s', 'cli', 1.0)")
    db.create_session("s", "cli")
    for value in values:
        db.append_message("s", "assistant", "x", token_count=value)
        reference.execute("INSERT INTO messages (session_id, role, content, timestamp, token_count)"
                          " VALUES ('s', 'assistant', 'x', 1.0, ?)", (value,))
    expected = [tuple(r) for r in reference.execute(MESSAGE_COUNTS)]
    reference.close()
    assert [tuple(r) for r in db._conn.execute(MESSAGE_COUNTS)] == expected
    assert expected[:3] == [(5.5, "real"), ("abc", "text"), (b"\x01", "blob")], "the premise"
    assert [m["token_count"] for m in db.get_messages("s")][:2] == [5.5, "abc"]


@pytest.mark.parametrize("engine", ["postgres"])
def test_a_fractional_message_token_count_on_postgresql_is_refused_and_nothing_written(db: SessionDB):
    db.create_session("s", "cli")
    with pytest.raises(InvalidArgumentError) as caught:
        db.append_message("s", "user", "x", token_count=5.5)
    assert "BIGINT" in str(caught.value)
    assert db.message_count("s") == 0 and db.get_session("s")["message_count"] == 0


def test_a_limit_or_offset_sqlite_cannot_take_is_sqlite3_integrity_error(db: SessionDB):
    db.create_session("s", "cli")
    for kwargs in ({"limit": "abc"}, {"limit": 5.5}, {"offset": "2.5"}, {"offset": b"1"}):
        with pytest.raises(sqlite3.IntegrityError) as caught:
            db.search_sessions(**kwargs)
        assert isinstance(caught.value, InvalidArgumentError) and "datatype mismatch" in str(caught.value)
    with pytest.raises(sqlite3.IntegrityError):
        db.list_sessions_rich(limit="x")
    # What INTEGER affinity makes whole is taken, as SQLite takes it.
    assert [s["id"] for s in db.search_sessions(limit="5", offset=0.0)] == ["s"]

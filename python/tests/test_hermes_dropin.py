"""Issue 30: the client as a drop-in for Hermes as it ships. Upstream code reaches past the
public API (``db._conn``, ``db._lock``, ``hermes_state.DEFAULT_DB_PATH``) and catches the
reference's sqlite3 errors; these tests use the client the way upstream's modules do
(agent/insights.py, cli.py --resume, acp_adapter/session.py, tools/session_search_tool.py)."""
from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import REPO, sqlite_only
from sessiondb import (
    ClosedError, DeadlineError, OutcomeUnknownError, SessionDB, SessionDBError, UnavailableError,
)
from sessiondb.errors import from_wire
from sessiondb.file_connection import FileConnection

PYTHON_DIR = str(REPO / "python")


@sqlite_only
def test_conn_is_the_references_sqlite3_connection_opened_on_first_use(db: SessionDB):
    assert db._file._conn is None, "not opened before it is asked for"
    conn = db._conn
    assert isinstance(conn, sqlite3.Connection) and db._conn is conn
    assert conn.isolation_level is None and conn.row_factory is sqlite3.Row
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert conn.execute("SELECT version FROM schema_version").fetchone()["version"] == 6
    # check_same_thread=False: another thread may use it.
    seen = []
    worker = threading.Thread(target=lambda: seen.append(conn.execute("SELECT COUNT(*) FROM sessions").fetchone()[0]))
    worker.start()
    worker.join()
    assert seen == [0]
    assert isinstance(db._lock, type(threading.Lock()))


@sqlite_only
def test_insights_read_what_the_daemon_wrote_through_conn(db: SessionDB):
    # agent/insights.py: InsightsEngine(db) keeps db._conn and runs its own SELECTs.
    db.create_session("a", "cli", model="m1")
    db.update_token_counts("a", input_tokens=100, output_tokens=40, estimated_cost_usd=0.5)
    db.append_message("a", "user", "hello")
    db.create_session("b", "telegram", model="m2")
    cutoff = time.time() - 3600
    rows = db._conn.execute(
        "SELECT source, COUNT(*) AS n, SUM(input_tokens) AS tokens, SUM(message_count) AS msgs "
        "FROM sessions WHERE started_at >= ? GROUP BY source ORDER BY source", (cutoff,),
    ).fetchall()
    assert [dict(r) for r in rows] == [
        {"source": "cli", "n": 1, "tokens": 100, "msgs": 1},
        {"source": "telegram", "n": 1, "tokens": 0, "msgs": 0},
    ]


@sqlite_only
def test_resume_clears_ended_at_through_conn_and_the_daemon_sees_it(db: SessionDB):
    # cli.py on --resume / -c: UPDATE through db._conn, then commit (a no-op in autocommit).
    db.create_session("s", "cli")
    db.end_session("s", "user_exit")
    db._conn.execute("UPDATE sessions SET ended_at = NULL, end_reason = NULL WHERE id = ?", ("s",))
    db._conn.commit()
    row = db.get_session("s")
    assert row["ended_at"] is None and row["end_reason"] is None
    db.end_session("s", "again")  # the daemon's next write sees the reopened row
    assert db.get_session("s")["end_reason"] == "again"


@sqlite_only
def test_acp_updates_under_lock_do_not_block_other_threads_calls(db: SessionDB):
    # acp_adapter/session.py: `with db._lock: db._conn.execute(...)` inside `except Exception`.
    db.create_session("acp", "acp", model_config={"cwd": "/old"})
    done = threading.Event()
    with db._lock:
        db._conn.execute("UPDATE sessions SET model_config = ? WHERE id = ?", ('{"cwd": "/new"}', "acp"))
        # While the lock is held, another thread's calls go on (this class's state has its own).
        worker = threading.Thread(target=lambda: (db.append_message("acp", "user", "hi"), done.set()))
        worker.start()
        assert done.wait(30)
    worker.join()
    assert db.get_session("acp")["model_config"] == '{"cwd": "/new"}'
    assert db.get_session("acp")["message_count"] == 1


@sqlite_only
def test_rows_backdated_through_conn_are_pruned_by_the_daemon(db: SessionDB):
    # The reference's own tests backdate sessions through db._conn, then prune.
    db.create_session("old", "cli")
    db.end_session("old", end_reason="done")
    db._conn.execute("UPDATE sessions SET started_at = ? WHERE id = ?", (time.time() - 100 * 86400, "old"))
    db._conn.commit()
    db.create_session("new", "cli")
    assert db.prune_sessions(older_than_days=90) == 1
    assert db.get_session("old") is None and db.get_session("new")["id"] == "new"


def test_an_older_reference_file_is_migrated_and_readable_through_conn(tmp: Path, start_daemon):
    path = tmp / "old.db"
    conn = sqlite3.connect(str(path))
    conn.executescript(
        "CREATE TABLE schema_version (version INTEGER NOT NULL); INSERT INTO schema_version VALUES (2);"
        "CREATE TABLE sessions (id TEXT PRIMARY KEY, source TEXT NOT NULL, user_id TEXT, model TEXT,"
        " model_config TEXT, system_prompt TEXT, parent_session_id TEXT, started_at REAL NOT NULL,"
        " ended_at REAL, end_reason TEXT, message_count INTEGER DEFAULT 0, tool_call_count INTEGER DEFAULT 0,"
        " input_tokens INTEGER DEFAULT 0, output_tokens INTEGER DEFAULT 0);"
        "CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL, role TEXT NOT NULL,"
        " content TEXT, tool_call_id TEXT, tool_calls TEXT, tool_name TEXT, timestamp REAL NOT NULL,"
        " token_count INTEGER, finish_reason TEXT);"
        "INSERT INTO sessions (id, source, started_at) VALUES ('existing', 'cli', 1000.0);"
    )
    conn.close()
    start_daemon(path)
    db = SessionDB(path, autostart=False)
    try:
        assert db._conn.execute("SELECT version FROM schema_version").fetchone()[0] == 6
        assert db.get_session("existing")["title"] is None
        assert db.set_session_title("existing", "Migrated Title") is True
        assert db._conn.execute("SELECT title FROM sessions").fetchone()["title"] == "Migrated Title"
    finally:
        db.close()


SCHEMA_V6 = (REPO / "test" / "fixtures" / "schema-v6.sql").read_text()
MESSAGE_INSERT = (
    "INSERT INTO messages (session_id, role, content, tool_call_id, tool_calls, tool_name, timestamp,"
    " token_count, finish_reason, reasoning, reasoning_details, codex_reasoning_items)"
    " VALUES (?, ?, ?, NULL, NULL, ?, ?, ?, NULL, NULL, NULL, NULL)"
)
STORED = (
    "SELECT s.id, typeof(s.id), s.input_tokens, typeof(s.input_tokens), s.output_tokens,"
    " typeof(s.output_tokens), s.model, typeof(s.model), m.role, m.content, typeof(m.content),"
    " m.tool_name, m.token_count, typeof(m.token_count)"
    " FROM sessions s JOIN messages m ON m.session_id = s.id ORDER BY m.id"
)


@sqlite_only
def test_odd_arguments_are_stored_as_the_references_own_sql_stores_them(db: SessionDB, tmp: Path):
    """The same calls made through the client and through the reference's SQL statements
    (SPEC section 3) bound by plain sqlite3 on a file of the same schema: the same values,
    of the same storage classes."""
    calls = [
        ("create", (42, "cli", 1.5)),
        ("append", (42, "user", 7, None, "5")),
        ("append", ("42", 7, 2.5, 3, 3.0)),
        ("tokens", (42, "5", 2.0)),
    ]
    reference = sqlite3.connect(str(tmp / "reference.db"), isolation_level=None)
    reference.executescript(SCHEMA_V6)
    for kind, args in calls:
        if kind == "create":
            session_id, source, model = args
            db.create_session(session_id, source, model=model)
            reference.execute(
                "INSERT OR IGNORE INTO sessions (id, source, user_id, model, model_config, system_prompt,"
                " parent_session_id, started_at) VALUES (?, ?, NULL, ?, NULL, NULL, NULL, ?)",
                (session_id, source, model, time.time()),
            )
        elif kind == "append":
            session_id, role, content, tool_name, token_count = args
            db.append_message(session_id, role, content, tool_name=tool_name, token_count=token_count)
            reference.execute(MESSAGE_INSERT, (session_id, role, content, tool_name, time.time(), token_count))
        else:
            session_id, input_tokens, output_tokens = args
            db.update_token_counts(session_id, input_tokens=input_tokens, output_tokens=output_tokens)
            reference.execute(
                "UPDATE sessions SET input_tokens = input_tokens + ?, output_tokens = output_tokens + ? WHERE id = ?",
                (input_tokens, output_tokens, session_id),
            )
    expected = [tuple(row) for row in reference.execute(STORED)]
    reference.close()
    assert [tuple(row) for row in db._conn.execute(STORED)] == expected
    assert expected[0][:4] == ("42", "text", 5, "integer"), "the premise: sqlite3's affinity rules"


@sqlite_only
def test_execute_write_is_the_references_write_helper(db: SessionDB):
    db.create_session("w", "cli")
    assert db._execute_write(lambda c: c.execute("UPDATE sessions SET title = 'x' WHERE id = 'w'").rowcount) == 1
    assert db.get_session_title("w") == "x"
    with pytest.raises(ZeroDivisionError):
        db._execute_write(lambda c: (c.execute("UPDATE sessions SET title = 'y' WHERE id = 'w'"), 1 / 0))
    assert db.get_session_title("w") == "x", "rolled back"


@sqlite_only
def test_conn_is_none_after_close_and_calls_raise_programming_error(db: SessionDB):
    db._conn.execute("SELECT 1")
    db.close()
    assert db._conn is None
    with pytest.raises(sqlite3.ProgrammingError) as caught:
        db.get_session("s")
    assert isinstance(caught.value, ClosedError) and caught.value.code == "CLOSED"
    with pytest.raises(sqlite3.ProgrammingError):
        db.get_session(None)


@pytest.mark.parametrize("engine", ["postgres"])
def test_conn_of_a_postgresql_database_is_a_clear_sqlite3_error(db: SessionDB):
    db.create_session("s", "cli")
    with pytest.raises(sqlite3.NotSupportedError) as caught:
        db._conn
    assert isinstance(caught.value, SessionDBError) and "PostgreSQL" in str(caught.value)
    assert db.get_session("s")["id"] == "s", "the handle works on"
    with pytest.raises(sqlite3.NotSupportedError) as caught:
        FileConnection("postgresql://hermes:secret@db.example/hermes", 1.0).get()
    assert "secret" not in str(caught.value)


def test_client_errors_are_the_references_sqlite3_classes(tmp: Path):
    for code in ("BUSY", "OVERLOADED", "TIMEOUT"):
        err = from_wire({"code": code, "message": "the write lock stayed taken"})
        assert isinstance(err, sqlite3.OperationalError) and str(err).startswith("database is locked")
        assert err.sqlite_errorname == "SQLITE_BUSY" and err.code == code
    assert isinstance(DeadlineError("TIMEOUT", "x"), TimeoutError)
    assert isinstance(from_wire({"code": "OUTCOME_UNKNOWN", "message": "m"}), OutcomeUnknownError)
    assert issubclass(OutcomeUnknownError, sqlite3.OperationalError)
    assert isinstance(from_wire({"code": "CLOSED", "message": "m"}), sqlite3.ProgrammingError)
    assert isinstance(from_wire({"code": "CONSTRAINT", "message": "m"}), sqlite3.IntegrityError)
    corrupt = from_wire({"code": "CORRUPT", "message": "page 3"})
    assert isinstance(corrupt, sqlite3.DatabaseError) and str(corrupt).startswith("database disk image is malformed")
    assert str(from_wire({"code": "IO", "message": "m"})).startswith("disk I/O error")
    permission = from_wire({"code": "PERMISSION", "message": "m"})
    assert isinstance(permission, PermissionError) and isinstance(permission, sqlite3.OperationalError)
    for code in ("IO", "PROTOCOL", "FRAME_TOO_LARGE", "INTERNAL", "A_CODE_FROM_A_NEWER_DAEMON"):
        assert isinstance(from_wire({"code": code, "message": "m"}), sqlite3.OperationalError), code
    with pytest.raises(sqlite3.OperationalError) as caught:  # `except sqlite3.Error` paths see it
        SessionDB(tmp / "state.db", autostart=False)
    assert isinstance(caught.value, UnavailableError)


def run_python(code: str, cwd: Path, env_extra: dict = None) -> str:
    env = {**os.environ, "PYTHONPATH": PYTHON_DIR, **(env_extra or {})}
    done = subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_hermes_state_exports_the_reference_modules_public_names(tmp: Path, bin_env: Path):
    import sessiondb.hermes_state as hermes_state

    for name in ("SessionDB", "DEFAULT_DB_PATH", "SCHEMA_VERSION", "SCHEMA_SQL", "FTS_SQL", "T", "logger",
                 "get_hermes_home", "json", "sqlite3", "threading", "time", "re", "random", "Path",
                 "Any", "Callable", "Dict", "List", "Optional", "TypeVar"):
        assert hasattr(hermes_state, name), name
    assert hermes_state.SCHEMA_VERSION == 6
    assert isinstance(hermes_state.DEFAULT_DB_PATH, Path) and hermes_state.DEFAULT_DB_PATH.name == "state.db"
    assert hermes_state.SessionDB.MAX_TITLE_LENGTH == 100
    # tools/session_search_tool.py's availability check, under a Hermes home:
    home = tmp / "home"
    home.mkdir()
    check = ("from hermes_state import DEFAULT_DB_PATH\n"
             "print(DEFAULT_DB_PATH, DEFAULT_DB_PATH.parent.exists())")
    out = run_python("import sessiondb.hermes_state as m, sys; sys.modules['hermes_state'] = m\n" + check, tmp,
                     {"HERMES_HOME": str(home), "SESSIONDB_PATH": ""})
    assert out == f"{home / 'state.db'} True"
    # Tests and tools re-point DEFAULT_DB_PATH; SessionDB() follows it.
    other = tmp / "other.db"
    hermes_state.DEFAULT_DB_PATH, saved = other, hermes_state.DEFAULT_DB_PATH
    try:
        db = hermes_state.SessionDB()
        try:
            assert Path(db.db_path) == other and other.exists()
        finally:
            db.close()
    finally:
        hermes_state.DEFAULT_DB_PATH = saved


def run_module(args: list, cwd: Path) -> str:
    env = {**os.environ, "PYTHONPATH": PYTHON_DIR}
    done = subprocess.run([sys.executable, "-m", "sessiondb.hermes_state", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_install_makes_import_hermes_state_give_the_client_even_in_a_hermes_checkout(tmp: Path):
    site_dir = tmp / "site"
    assert "wrote" in run_module(["--install", "--target", str(site_dir)], tmp)  # the README's one line
    checkout = tmp / "hermes-agent"
    checkout.mkdir()
    (checkout / "hermes_state.py").write_text("raise SystemExit('the reference was imported')\n")
    code = (f"import site; site.addsitedir({str(site_dir)!r})\n"
            "import sys; assert 'sessiondb' not in sys.modules, 'nothing imported before Hermes asks'\n"
            "import hermes_state; from hermes_state import SessionDB, DEFAULT_DB_PATH\n"
            "print(hermes_state.__name__, SessionDB.__module__)")
    assert run_python(code, checkout) == "sessiondb.hermes_state sessiondb.hermes_state"
    run_module(["--uninstall", "--target", str(site_dir)], tmp)
    assert sorted(os.listdir(site_dir)) == []


@sqlite_only
def test_a_forked_child_reconnects_instead_of_hanging_and_the_parent_goes_on(daemon):
    db = SessionDB(daemon.db, autostart=False, timeout=15)
    try:
        db.create_session("parent", "cli")
        db._conn.execute("SELECT 1")
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: its calls must not wait on the parent's reader thread
            status = 1
            try:
                os.close(read_end)
                db.create_session("child", "cli")
                db.append_message("child", "user", "from the child")
                assert db.get_session("parent")["id"] == "parent"
                assert db._conn.execute("SELECT COUNT(*) FROM sessions").fetchone()[0] == 2
                os.write(write_end, b"ok")
                status = 0
            except BaseException as err:  # noqa: BLE001 - reported to the parent
                os.write(write_end, repr(err).encode()[:500])
            finally:
                os._exit(status)
        os.close(write_end)
        _, status = os.waitpid(pid, 0)
        report = os.read(read_end, 1000).decode()
        os.close(read_end)
        assert os.WEXITSTATUS(status) == 0 and report == "ok", report
        # The parent's connection was left alone by the child.
        assert db.get_messages("child")[0]["content"] == "from the child"
        assert db.session_count() == 2
    finally:
        db.close()

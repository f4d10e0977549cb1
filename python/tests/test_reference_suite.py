"""Issue 30 item 7: the cases of the reference's own test file (hermes-agent's
tests/test_hermes_state.py, the SessionDB CRUD / FTS5 / title / listing / prune / schema tests),
written here as tests of our own against the client: each case makes the calls upstream's test
makes and checks what it checks, through ``from sessiondb import SessionDB`` (``db._conn`` where
upstream uses it). No upstream code is copied. One daemon serves the module's file; each test
starts from an empty store."""
from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Iterator

import pytest

from conftest import Daemon
from sessiondb import SessionDB

SCHEMA_VERSION = 6


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    import tempfile
    folder = Path(tempfile.mkdtemp(prefix="sdb-ref-", dir="/tmp"))
    daemon = Daemon(folder / "test_state.db", [])
    yield daemon
    daemon.stop()


@pytest.fixture
def db(served: Daemon) -> Iterator[SessionDB]:
    handle = SessionDB(db_path=served.db, autostart=False)
    # An empty store for each case, as upstream's fresh temp file per test.
    handle._conn.execute("DELETE FROM messages")
    handle._conn.execute("DELETE FROM sessions")
    yield handle
    handle.close()


def backdate(db: SessionDB, session_id: str, days: float) -> None:
    db._conn.execute("UPDATE sessions SET started_at = ? WHERE id = ?", (time.time() - days * 86400, session_id))
    db._conn.commit()


# -- session lifecycle ---------------------------------------------------------------------------

def test_create_then_get(db):
    assert db.create_session(session_id="s1", source="cli", model="test-model") == "s1"
    row = db.get_session("s1")
    assert (row["source"], row["model"], row["ended_at"]) == ("cli", "test-model", None)


def test_get_missing_session_is_none(db):
    assert db.get_session("nonexistent") is None


def test_end_sets_float_ended_at_and_reason(db):
    db.create_session(session_id="s1", source="cli")
    db.end_session("s1", end_reason="user_exit")
    row = db.get_session("s1")
    assert isinstance(row["ended_at"], float) and row["end_reason"] == "user_exit"


def test_a_second_end_keeps_the_first_reason_and_time(db):
    db.create_session("s1", "cli")
    db.end_session("s1", end_reason="compression")
    first = db.get_session("s1")["ended_at"]
    time.sleep(0.01)
    db.end_session("s1", end_reason="resumed_other")
    row = db.get_session("s1")
    assert (row["end_reason"], row["ended_at"]) == ("compression", first)


def test_reopen_lets_a_session_be_ended_again(db):
    db.create_session("s1", "cli")
    db.end_session("s1", end_reason="compression")
    db.reopen_session("s1")
    db.end_session("s1", end_reason="user_exit")
    assert db.get_session("s1")["end_reason"] == "user_exit"


def test_update_system_prompt(db):
    db.create_session("s1", "cli")
    db.update_system_prompt("s1", "You are a helpful assistant.")
    assert db.get_session("s1")["system_prompt"] == "You are a helpful assistant."


def test_token_counts_accumulate(db):
    db.create_session("s1", "cli")
    db.update_token_counts("s1", input_tokens=200, output_tokens=100)
    db.update_token_counts("s1", input_tokens=100, output_tokens=50)
    row = db.get_session("s1")
    assert (row["input_tokens"], row["output_tokens"]) == (300, 150)


def test_token_counts_absolute_sets(db):
    db.create_session("s1", "cli")
    db.update_token_counts("s1", input_tokens=100, output_tokens=50)
    db.update_token_counts("s1", input_tokens=300, output_tokens=150, absolute=True)
    assert db.get_session("s1")["input_tokens"] == 300


def test_token_update_fills_a_missing_model(db):
    db.create_session("s1", "telegram")
    db.update_token_counts("s1", input_tokens=10, output_tokens=5, model="openai/gpt-5.4")
    assert db.get_session("s1")["model"] == "openai/gpt-5.4"


def test_token_update_keeps_an_existing_model(db):
    db.create_session("s1", "cli", model="anthropic/claude-opus-4.6")
    db.update_token_counts("s1", input_tokens=10, output_tokens=5, model="openai/gpt-5.4")
    assert db.get_session("s1")["model"] == "anthropic/claude-opus-4.6"


def test_parent_session_id_is_kept(db):
    db.create_session("parent", "cli")
    db.create_session("child", "cli", parent_session_id="parent")
    assert db.get_session("child")["parent_session_id"] == "parent"


# -- messages ------------------------------------------------------------------------------------

def test_append_then_get_in_order(db):
    db.create_session("s1", "cli")
    db.append_message("s1", role="user", content="Hello")
    db.append_message("s1", role="assistant", content="Hi there!")
    messages = db.get_messages("s1")
    assert [(m["role"], m["content"]) for m in messages] == [("user", "Hello"), ("assistant", "Hi there!")]


def test_messages_count_on_the_session(db):
    db.create_session("s1", "cli")
    db.append_message("s1", role="user", content="Hello")
    db.append_message("s1", role="assistant", content="Hi")
    assert db.get_session("s1")["message_count"] == 2


def test_a_tool_reply_is_no_tool_call(db):
    db.create_session("s1", "cli")
    db.append_message("s1", role="tool", content="result", tool_name="web_search")
    assert db.get_session("s1")["tool_call_count"] == 0


@pytest.mark.parametrize("calls", [1, 2])
def test_tool_calls_counted_per_call_not_per_message(db, calls):
    db.create_session("s1", "cli")
    tool_calls = [{"id": f"call_{i}", "function": {"name": "ha_call_service", "arguments": "{}"}} for i in range(calls)]
    db.append_message("s1", role="assistant", content="", tool_calls=tool_calls)
    for _ in range(calls):
        db.append_message("s1", role="tool", content="ok", tool_name="ha_call_service")
    assert db.get_session("s1")["tool_call_count"] == calls


def test_tool_calls_come_back_decoded(db):
    db.create_session("s1", "cli")
    tool_calls = [{"id": "call_1", "function": {"name": "web_search", "arguments": "{}"}}]
    db.append_message("s1", role="assistant", tool_calls=tool_calls)
    assert db.get_messages("s1")[0]["tool_calls"] == tool_calls


def test_conversation_form(db):
    db.create_session("s1", "cli")
    db.append_message("s1", role="user", content="Hello")
    db.append_message("s1", role="assistant", content="Hi!")
    assert db.get_messages_as_conversation("s1") == [
        {"role": "user", "content": "Hello"}, {"role": "assistant", "content": "Hi!"}]


def test_finish_reason_kept(db):
    db.create_session("s1", "cli")
    db.append_message("s1", role="assistant", content="Done", finish_reason="stop")
    assert db.get_messages("s1")[0]["finish_reason"] == "stop"


def test_reasoning_restored_on_assistant_messages_only(db):
    db.create_session("s1", "telegram")
    db.append_message("s1", role="user", content="create a cron job")
    db.append_message("s1", role="assistant", content=None, reasoning="I should call the cronjob tool.",
                      tool_calls=[{"function": {"name": "cronjob", "arguments": "{}"}, "id": "c1", "type": "function"}])
    db.append_message("s1", role="tool", content='{"job_id": "abc"}', tool_call_id="c1")
    conv = db.get_messages_as_conversation("s1")
    assert len(conv) == 3 and conv[1]["reasoning"] == "I should call the cronjob tool."
    assert "reasoning" not in conv[0] and "reasoning" not in conv[2]


def test_reasoning_details_round_trip(db):
    db.create_session("s1", "telegram")
    details = [{"type": "reasoning.summary", "summary": "Thinking about tools"},
               {"type": "reasoning.encrypted_content", "encrypted_content": "abc123"}]
    db.append_message("s1", role="assistant", content="Hello", reasoning="Thinking", reasoning_details=details)
    (msg,) = db.get_messages_as_conversation("s1")
    assert (msg["reasoning"], msg["reasoning_details"]) == ("Thinking", details)


def test_codex_reasoning_items_round_trip(db):
    db.create_session("s1", "cli")
    items = [{"type": "reasoning", "id": "rs_1", "encrypted_content": "enc", "summary": []}]
    db.append_message("s1", role="assistant", content="Hello", codex_reasoning_items=items)
    assert db.get_messages_as_conversation("s1")[0]["codex_reasoning_items"] == items


# -- FTS5 search ---------------------------------------------------------------------------------

def test_search_finds_content_with_snippets(db):
    db.create_session("s1", "cli")
    db.append_message("s1", role="user", content="How do I deploy with Docker?")
    db.append_message("s1", role="assistant", content="Use docker compose up.")
    results = db.search_messages("docker")
    assert len(results) == 2 and any("docker" in r.get("snippet", "").lower() for r in results)


@pytest.mark.parametrize("query", ["", "   "])
def test_blank_search_is_empty(db, query):
    assert db.search_messages(query) == []


def test_search_source_filter(db):
    db.create_session("s1", "cli")
    db.append_message("s1", role="user", content="CLI question about Python")
    db.create_session("s2", "telegram")
    db.append_message("s2", role="user", content="Telegram question about Python")
    results = db.search_messages("Python", source_filter=["telegram"])
    assert results and all(r["source"] == "telegram" for r in results)


def test_search_role_filter(db):
    db.create_session("s1", "cli")
    db.append_message("s1", role="user", content="What is FastAPI?")
    db.append_message("s1", role="assistant", content="FastAPI is a web framework.")
    results = db.search_messages("FastAPI", role_filter=["assistant"])
    assert results and all(r["role"] == "assistant" for r in results)


def test_search_results_carry_context(db):
    db.create_session("s1", "cli")
    db.append_message("s1", role="user", content="Tell me about Kubernetes")
    db.append_message("s1", role="assistant", content="Kubernetes is an orchestrator.")
    results = db.search_messages("Kubernetes")
    assert len(results) == 2 and isinstance(results[0]["context"], list) and results[0]["context"]


@pytest.mark.parametrize("query", ["C++", '"unterminated', "(problem", "hello AND", "***", "{test}",
                                   "OR hello", "a AND OR b"])
def test_fts5_syntax_in_a_query_never_raises(db, query):
    db.create_session("s1", "cli")
    db.append_message("s1", role="user", content="How do I use C++ templates?")
    assert isinstance(db.search_messages(query), list)


def test_fts5_query_cleaning(db):
    s = SessionDB._sanitize_fts5_query
    assert s("hello world") == "hello world"
    for dangerous, char in (("C++", "+"), ('"unterminated', '"'), ("(problem", "("), ("{test}", "{")):
        assert char not in s(dangerous)
    assert (s("hello AND"), s("OR world"), s("***"), s("deploy*")) == ("hello", "world", "", "deploy*")


# -- listing and counts --------------------------------------------------------------------------

def test_search_sessions_lists_filters_and_pages(db):
    for i in range(5):
        db.create_session(f"s{i}", "cli")
    db.create_session("t", "telegram")
    assert len(db.search_sessions()) == 6
    assert [s["id"] for s in db.search_sessions(source="telegram")] == ["t"]
    page1, page2 = db.search_sessions(limit=2), db.search_sessions(limit=2, offset=2)
    assert len(page1) == len(page2) == 2 and page1[0]["id"] != page2[0]["id"]


def test_session_and_message_counts(db):
    assert (db.session_count(), db.message_count()) == (0, 0)
    db.create_session("s1", "cli")
    db.create_session("s2", "telegram")
    db.create_session("s3", "cli")
    db.append_message("s1", role="user", content="A")
    db.append_message("s2", role="user", content="B")
    db.append_message("s2", role="user", content="C")
    assert (db.session_count(), db.session_count(source="cli"), db.session_count(source="telegram")) == (3, 2, 1)
    assert (db.message_count(), db.message_count(session_id="s1"), db.message_count(session_id="s2")) == (3, 1, 2)


# -- delete, resolve, export ---------------------------------------------------------------------

def test_delete_session_and_its_messages(db):
    db.create_session("s1", "cli")
    db.append_message("s1", role="user", content="Hello")
    assert db.delete_session("s1") is True
    assert db.get_session("s1") is None and db.message_count(session_id="s1") == 0
    assert db.delete_session("nope") is False


def test_resolve_session_id(db):
    db.create_session("20260315_092437_c9a6ff", "cli")
    assert db.resolve_session_id("20260315_092437_c9a6ff") == "20260315_092437_c9a6ff"
    assert db.resolve_session_id("20260315_092437_c9a6") == "20260315_092437_c9a6ff"
    db.create_session("20260315_092437_c9a6aa", "cli")
    assert db.resolve_session_id("20260315_092437_c9a6") is None, "ambiguous"


def test_resolve_session_id_escapes_like_wildcards(db):
    db.create_session("20260315_092437_c9a6ff", "cli")
    db.create_session("20260315X092437_c9a6ff", "cli")
    assert db.resolve_session_id("20260315_092437") == "20260315_092437_c9a6ff"


def test_export_session_and_all(db):
    db.create_session("s1", "cli", model="test")
    db.append_message("s1", role="user", content="Hello")
    db.append_message("s1", role="assistant", content="Hi")
    db.create_session("s2", "telegram")
    export = db.export_session("s1")
    assert export["source"] == "cli" and len(export["messages"]) == 2
    assert db.export_session("nope") is None
    assert len(db.export_all()) == 2
    assert [e["source"] for e in db.export_all(source="cli")] == ["cli"]


# -- prune (backdated through db._conn, as upstream's tests do) ----------------------------------

def test_prune_removes_old_ended_sessions_only(db):
    db.create_session("old", "cli")
    db.end_session("old", end_reason="done")
    backdate(db, "old", 100)
    db.create_session("active", "cli")
    backdate(db, "active", 200)
    db.create_session("new", "cli")
    assert db.prune_sessions(older_than_days=90) == 1
    assert db.get_session("old") is None
    assert db.get_session("active") is not None and db.get_session("new")["id"] == "new"


def test_prune_with_a_source(db):
    for sid, src in (("old_cli", "cli"), ("old_tg", "telegram")):
        db.create_session(sid, src)
        db.end_session(sid, end_reason="done")
        backdate(db, sid, 200)
    assert db.prune_sessions(older_than_days=90, source="cli") == 1
    assert db.get_session("old_cli") is None and db.get_session("old_tg") is not None


# -- titles --------------------------------------------------------------------------------------

def test_titles_set_update_clear_and_survive_end(db):
    db.create_session("s1", "cli")
    assert db.get_session("s1")["title"] is None
    assert db.set_session_title("s1", "My Session") is True
    assert db.set_session_title("nonexistent", "Title") is False
    db.set_session_title("s1", "Updated Title")
    assert db.get_session("s1")["title"] == "Updated Title"
    db.end_session("s1", end_reason="user_exit")
    assert db.get_session("s1")["title"] == "Updated Title"
    db.set_session_title("s1", "")
    assert db.get_session("s1")["title"] is None


def test_titles_in_listings_and_exports(db):
    db.create_session("s1", "cli")
    db.set_session_title("s1", "Debugging Auth")
    db.append_message("s1", role="user", content="Hello")
    db.create_session("s2", "cli")
    assert [s["id"] for s in db.search_sessions() if s.get("title") == "Debugging Auth"] == ["s1"]
    assert db.export_session("s1")["title"] == "Debugging Auth"
    assert db.list_sessions_rich()[-1]["title"] == "Debugging Auth"


def test_empty_titles_do_not_collide(db):
    db.create_session("s1", "cli")
    db.create_session("s2", "cli")
    db.set_session_title("s1", "")
    db.set_session_title("s2", "")
    assert db.get_session("s1")["title"] is None and db.get_session("s2")["title"] is None


@pytest.mark.parametrize("raw, clean", [
    ("My Project", "My Project"), ("  hello world  ", "hello world"), ("hello   world", "hello world"),
    ("hello\t\nworld", "hello world"), (None, None), ("", None), ("   \t\n  ", None),
    ("hello\x00world", "helloworld"), ("\x07\x08test\x1b", "test"), ("hello\x7fworld", "helloworld"),
    ("hello\u200bworld", "helloworld"), ("hello\u200dworld", "helloworld"), ("hello\u202eworld", "helloworld"),
    ("\ufeffhello", "hello"), ("\x00\x01\x02\u200b\ufeff", None), ("A" * 100, "A" * 100),
    ("🚀 My Project 🎉", "🚀 My Project 🎉"), ("我的项目", "我的项目"), ("Résumé éditing", "Résumé éditing"),
    ("PR #438 — fixing the 'auth' middleware", "PR #438 — fixing the 'auth' middleware"),
])
def test_sanitize_title(raw, clean):
    assert SessionDB.sanitize_title(raw) == clean


def test_too_long_titles_are_value_errors(db):
    with pytest.raises(ValueError, match="too long"):
        SessionDB.sanitize_title("A" * 101)
    db.create_session("s1", "cli")
    with pytest.raises(ValueError, match="too long"):
        db.set_session_title("s1", "X" * 150)
    db.set_session_title("s1", "  hello\x00  world  ")
    assert db.get_session("s1")["title"] == "hello world"


def test_title_uniqueness_and_lookups(db):
    db.create_session("s1", "cli")
    db.create_session("s2", "cli")
    db.set_session_title("s1", "my project")
    with pytest.raises(ValueError, match="already in use"):
        db.set_session_title("s2", "my project")
    assert db.set_session_title("s1", "my project") is True
    assert db.get_session_by_title("my project")["id"] == "s1"
    assert db.get_session_by_title("nonexistent") is None
    assert (db.get_session_title("s1"), db.get_session_title("s2"), db.get_session_title("nonexistent")) == (
        "my project", None, None)


def test_title_lineage(db):
    assert db.get_next_title_in_lineage("my project") == "my project"
    db.create_session("s1", "cli")
    db.set_session_title("s1", "my project")
    assert db.get_next_title_in_lineage("my project") == "my project #2"
    time.sleep(0.01)
    db.create_session("s2", "cli")
    db.set_session_title("s2", "my project #2")
    time.sleep(0.01)
    db.create_session("s3", "cli")
    db.set_session_title("s3", "my project #3")
    assert db.resolve_session_by_title("my project") == "s3", "the latest numbered variant"
    assert db.resolve_session_by_title("my project #2") == "s2"
    assert db.resolve_session_by_title("nonexistent") is None
    assert db.get_next_title_in_lineage("my project") == "my project #4"
    assert db.get_next_title_in_lineage("my project #2") == "my project #4"


@pytest.mark.parametrize("title, decoy", [("test_project", "testXproject #2"), ("100% done", "100X done #2")])
def test_like_wildcards_in_titles_match_nothing_else(db, title, decoy):
    db.create_session("s1", "cli")
    db.set_session_title("s1", title)
    db.create_session("s2", "cli")
    db.set_session_title("s2", decoy)
    assert db.resolve_session_by_title(title) == "s1"
    assert db.get_next_title_in_lineage(title) == f"{title} #2"


# -- rich listing --------------------------------------------------------------------------------

def test_rich_listing_preview_and_last_active(db):
    db.create_session("s1", "cli")
    db.append_message("s1", "system", "You are a helpful assistant.")
    db.append_message("s1", "user", "Help me refactor the auth module please\nLine two")
    time.sleep(0.01)
    db.append_message("s1", "assistant", "Sure, let me look at it.")
    (row,) = db.list_sessions_rich()
    assert "Help me refactor the auth module" in row["preview"] and "\n" not in row["preview"]
    assert row["last_active"] > row["started_at"]


def test_rich_listing_preview_truncation_empty_and_fallback(db):
    db.create_session("s1", "cli")
    db.append_message("s1", "user", "A" * 100)
    db.create_session("s2", "telegram")
    db.append_message("s2", "system", "System prompt")
    db.create_session("s3", "cli")
    rows = {r["id"]: r for r in db.list_sessions_rich()}
    assert len(rows["s1"]["preview"]) == 63 and rows["s1"]["preview"].endswith("...")
    assert rows["s2"]["preview"] == ""
    assert rows["s3"]["last_active"] == rows["s3"]["started_at"]
    assert [r["id"] for r in db.list_sessions_rich(source="telegram")] == ["s2"]


# -- schema (through db._conn) -------------------------------------------------------------------

def test_schema_through_conn(db):
    conn = db._conn
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"sessions", "messages", "schema_version"} <= tables
    assert conn.execute("SELECT version FROM schema_version").fetchone()[0] == SCHEMA_VERSION
    assert "title" in {r[1] for r in conn.execute("PRAGMA table_info(sessions)")}


def test_a_version_2_file_is_migrated(tmp: Path, bin_env: Path):
    path = tmp / "migrate_test.db"
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
        "INSERT INTO sessions (id, source, started_at) VALUES ('existing', 'cli', 1000.0);")
    conn.close()
    migrated = SessionDB(db_path=path)  # autostart, as upstream's SessionDB(db_path=...) opens it
    try:
        assert migrated._conn.execute("SELECT version FROM schema_version").fetchone()[0] == SCHEMA_VERSION
        assert migrated.get_session("existing")["title"] is None
        assert migrated.set_session_title("existing", "Migrated Title") is True
        assert migrated.get_session("existing")["title"] == "Migrated Title"
    finally:
        migrated.close()


# -- later cases of upstream's file that hold at schema 6 ----------------------------------------

def test_reasoning_never_on_user_messages_and_empty_reasoning_is_absent(db):
    db.create_session("s1", "telegram")
    db.append_message("s1", role="user", content="hi")
    db.append_message("s1", role="assistant", content="hello", reasoning=None)
    db.append_message("s1", role="assistant", content="again", reasoning="")
    assert all("reasoning" not in m for m in db.get_messages_as_conversation("s1"))


def test_default_search_covers_every_platform(db):
    platforms = ("cli", "telegram", "signal", "homeassistant", "acp", "matrix")
    for src in platforms:
        db.create_session(f"s-{src}", src)
        db.append_message(f"s-{src}", role="user", content=f"universal search test from {src}")
    assert {r["source"] for r in db.search_messages("universal search test")} == set(platforms)


def test_search_context_is_the_sessions_own_neighbours(db):
    db.create_session("s1", "cli")
    db.create_session("s2", "cli")
    for sid, role, content in (("s1", "user", "before needle"), ("s2", "user", "other session message"),
                               ("s1", "assistant", "needle match"), ("s2", "assistant", "another other session message"),
                               ("s1", "user", "after needle")):
        db.append_message(sid, role=role, content=content)
    hit = next(r for r in db.search_messages('"needle match"') if r["session_id"] == "s1" and "needle match" in r["snippet"])
    assert [m["content"] for m in hit["context"]] == ["before needle", "needle match", "after needle"]


@pytest.mark.parametrize("content, query", [
    ("Run the chat-send command", "chat-send"),
    ("Working on P2.2 session_search edge cases", "P2.2"),
    ("See simulate.p2.test.ts for details", "simulate.p2.test.ts"),
    ("docker networking is complex", '"docker networking"'),
])
def test_hyphenated_dotted_and_quoted_terms_are_found(db, content, query):
    db.create_session("s1", "cli")
    db.append_message("s1", role="user", content=content)
    assert len(db.search_messages(query)) >= 1


@pytest.mark.parametrize("raw, clean", [
    ('"exact phrase"', '"exact phrase"'), ("chat-send", '"chat-send"'), ("docker-compose-up", '"docker-compose-up"'),
    ('"chat-send"', '"chat-send"'), ('"my chat-send thing"', '"my chat-send thing"'), ("P2.2", '"P2.2"'),
    ("simulate.p2.test.ts", '"simulate.p2.test.ts"'), ('"P2.2"', '"P2.2"'), ("my-app.config.ts", '"my-app.config.ts"'),
])
def test_fts5_query_quotes_phrases_hyphens_and_dots(raw, clean):
    assert SessionDB._sanitize_fts5_query(raw) == clean


def test_fts5_query_keeps_phrases_beside_other_terms():
    s = SessionDB._sanitize_fts5_query
    assert '"docker networking"' in s('"docker networking" setup')
    both = s('"hello world" OR "foo bar"')
    assert '"hello world"' in both and '"foo bar"' in both
    mixed = s("fix chat-send bug")
    assert '"chat-send"' in mixed and "fix" in mixed and "bug" in mixed


def test_a_content_match_shows_in_its_snippet(db):
    db.create_session("s1", "cli")
    db.append_message("s1", role="user", content="Uploading to BUCKETMARKER_CONTENT.")
    (hit,) = db.search_messages("BUCKETMARKER_CONTENT")
    assert "BUCKETMARKER_CONTENT" in hit["snippet"]


def test_cjk_searches(db):
    db.create_session("s1", "cli")
    db.create_session("s2", "telegram")
    db.append_message("s1", role="user", content="昨晚讨论了记忆系统")
    db.append_message("s2", role="user", content="昨晚的会议纪要已发送")
    assert {r["session_id"] for r in db.search_messages("昨晚")} == {"s1", "s2"}
    assert db.search_messages("不存在的词") == []
    db.append_message("s1", role="user", content="讨论Agent通信协议")
    assert len(db.search_messages("Agent通信")) == 1


def test_cjk_match_deep_in_a_message_is_in_its_snippet_once(db):
    db.create_session("s1", "cli")
    db.append_message("s1", role="user", content="这是一段很长的前缀" * 6 + "记忆断裂" + "这是后缀内容" * 6)
    db.append_message("s1", role="user", content="测试去重逻辑")
    (hit,) = db.search_messages("记忆断裂")
    assert "记忆断裂" in hit["snippet"]
    assert len(db.search_messages("测试")) == 1, "no duplicate of one message"


def test_cjk_wildcards_are_literal(db):
    # (Upstream's later "记忆系统 OR 断裂连接" case relies on the trigram index its later schemas
    # add, newer than schema 6: left out.)
    db.create_session("s1", "cli")
    db.create_session("s2", "cli")
    db.append_message("s1", role="user", content="达成100%完成率")
    db.append_message("s2", role="user", content="达成100完成率是目标")
    assert [r["session_id"] for r in db.search_messages("100%完成")] == ["s1"]


def test_prune_of_part_of_a_chain_orphans_the_newer_sessions(db):
    for sid, parent, reason in (("A", None, "compressed"), ("B", "A", "compressed"), ("C", "B", "compressed"),
                                ("D", "C", "done")):
        db.create_session(sid, "cli", parent_session_id=parent)
        db.end_session(sid, end_reason=reason)
    for sid, days in (("A", 200), ("B", 200), ("C", 10), ("D", 10)):
        backdate(db, sid, days)
    assert db.prune_sessions(older_than_days=90) == 2
    assert db.get_session("A") is None and db.get_session("B") is None
    assert db.get_session("C")["parent_session_id"] is None and db.get_session("D")["parent_session_id"] == "C"


def test_prune_of_a_whole_old_chain(db):
    for sid, parent in (("X", None), ("Y", "X"), ("Z", "Y")):
        db.create_session(sid, "cli", parent_session_id=parent)
        db.end_session(sid, end_reason="done")
        backdate(db, sid, 200)
    assert db.prune_sessions(older_than_days=90) == 3
    assert all(db.get_session(sid) is None for sid in "XYZ")


def test_delete_orphans_the_children(db):
    db.create_session("parent", "cli")
    db.create_session("child", "cli", parent_session_id="parent")
    db.create_session("grandchild", "cli", parent_session_id="child")
    assert db.delete_session("parent") is True
    assert db.get_session("child")["parent_session_id"] is None
    assert db.get_session("grandchild")["parent_session_id"] == "child"


def test_opening_the_file_again_changes_no_column(db, served):
    columns = {r[1] for r in db._conn.execute("PRAGMA table_info(messages)")}
    again = SessionDB(db_path=served.db, autostart=False)
    try:
        assert {r[1] for r in again._conn.execute("PRAGMA table_info(messages)")} == columns
    finally:
        again.close()

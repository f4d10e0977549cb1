"""Every method through a real daemon, for SessionDB and AsyncSessionDB, over SQLite and over
PostgreSQL (the `store` fixture runs each test against all four): the behaviours the TypeScript
contract suite pins (SPEC 3). Where PostgreSQL cannot give SQLite's result (docs/postgres.md "What differs
from SQLite"), the test at the end says so, engine by engine."""
from __future__ import annotations

import sqlite3
import time
import uuid

import pytest

from conftest import engine_of, run_sql
from sessiondb import (
    ClosedError, ConstraintError, IdempotencyConflictError, InvalidArgumentError, SessionDBError, TitleInUseError,
    TitleTooLongError,
)

SESSION_KEYS = {
    "id", "source", "user_id", "model", "model_config", "system_prompt", "parent_session_id",
    "started_at", "ended_at", "end_reason", "message_count", "tool_call_count", "input_tokens",
    "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens",
    "billing_provider", "billing_base_url", "billing_mode", "estimated_cost_usd",
    "actual_cost_usd", "cost_status", "cost_source", "pricing_version", "title",
}
MESSAGE_KEYS = {
    "id", "session_id", "role", "content", "tool_call_id", "tool_calls", "tool_name", "timestamp",
    "token_count", "finish_reason", "reasoning", "reasoning_details", "codex_reasoning_items",
}


def backdate(store, session_id: str, days: float, ended: bool = True) -> None:
    started = time.time() - days * 86400
    run_sql(store.db_path, "UPDATE sessions SET started_at = ?, ended_at = ? WHERE id = ?",
            (started, started + 1 if ended else None, session_id))


# -- sessions ----------------------------------------------------------------------------------

def test_create_session_stores_every_field_and_returns_the_id(store):
    before = time.time()
    assert store.create_session("s1", "cli", model="m", model_config={"t": 0.5}, system_prompt="sp",
                                user_id="u") == "s1"
    row = store.get_session("s1")
    assert set(row) == SESSION_KEYS
    assert (row["source"], row["model"], row["system_prompt"], row["user_id"]) == ("cli", "m", "sp", "u")
    assert row["model_config"] == '{"t": 0.5}'  # json.dumps, as the reference
    assert row["message_count"] == 0 and row["tool_call_count"] == 0 and row["ended_at"] is None
    assert before - 1 <= row["started_at"] <= time.time() + 1


def test_a_duplicate_id_is_ignored_and_the_first_row_wins(store):
    store.create_session("s1", "cli", model="first")
    assert store.create_session("s1", "telegram", model="second") == "s1"
    assert store.get_session("s1")["model"] == "first"
    assert store.session_count() == 1


def test_model_config_empty_stores_null(store):
    store.create_session("a", "cli", model_config={})
    assert store.get_session("a")["model_config"] is None


def test_unknown_parent_is_an_integrity_error_and_writes_nothing(store):
    store.create_session("p", "cli")
    store.create_session("c", "cli", parent_session_id="p")
    assert store.get_session("c")["parent_session_id"] == "p"
    with pytest.raises(sqlite3.IntegrityError) as caught:
        store.create_session("orphan", "cli", parent_session_id="nope")
    assert caught.value.code == "CONSTRAINT"
    assert store.get_session("orphan") is None


def test_an_empty_source_is_a_value_error(store):
    with pytest.raises(ValueError) as caught:
        store.create_session("x", "")
    assert isinstance(caught.value, InvalidArgumentError) and caught.value.code == "INVALID_ARGUMENT"
    assert store.session_count() == 0


def test_ensure_session_creates_with_unknown_and_never_overwrites(store):
    store.ensure_session("e1")
    assert store.get_session("e1")["source"] == "unknown"
    store.create_session("e2", "cli", model="m")
    store.ensure_session("e2", "other", "x")
    assert store.get_session("e2")["source"] == "cli" and store.get_session("e2")["model"] == "m"
    assert isinstance(store.append_message("e1", "user", "hi"), int)


def test_end_reopen_and_end_again(store):
    store.create_session("s", "cli")
    store.end_session("s", "user_exit")
    first = store.get_session("s")
    store.end_session("s", "other")
    assert store.get_session("s")["end_reason"] == "user_exit"
    assert store.get_session("s")["ended_at"] == first["ended_at"]
    store.reopen_session("s")
    assert store.get_session("s")["ended_at"] is None and store.get_session("s")["end_reason"] is None
    store.end_session("s", "compression")
    assert store.get_session("s")["end_reason"] == "compression"


def test_writes_on_a_missing_id_do_nothing_and_do_not_fail(store):
    assert store.end_session("missing", "x") is None
    assert store.reopen_session("missing") is None
    assert store.update_system_prompt("missing", "p") is None
    assert store.update_token_counts("missing", input_tokens=5) is None
    assert store.get_session("missing") is None
    store.create_session("s", "cli")
    store.update_system_prompt("s", "new prompt")
    assert store.get_session("s")["system_prompt"] == "new prompt"


def test_resolve_session_id(store):
    for sid in ("abc", "abcdef", "xyz_1", "xyzA1"):
        store.create_session(sid, "cli")
    assert store.resolve_session_id("abc") == "abc"
    assert store.resolve_session_id("abcd") == "abcdef"
    assert store.resolve_session_id("ab") is None
    assert store.resolve_session_id("nothing") is None
    assert store.resolve_session_id("XYZ_") == "xyz_1"  # _ literal, ASCII case-insensitive


def test_search_sessions_and_session_count(store):
    for i in range(25):
        store.create_session(f"s{i:02d}", "cli" if i % 2 else "telegram")
    run_sql(store.db_path, "UPDATE sessions SET started_at = 1000 + CAST(substr(id, 2) AS INTEGER)")
    assert len(store.search_sessions()) == 20
    rows = store.search_sessions(source="cli", limit=3, offset=1)
    assert [r["id"] for r in rows] == ["s21", "s19", "s17"]
    assert store.session_count() == 25 and store.session_count(source="cli") == 12


# -- tokens ------------------------------------------------------------------------------------

def test_update_token_counts_increment_absolute_and_costs(store):
    store.create_session("s", "cli")
    store.update_token_counts("s", input_tokens=10, output_tokens=5, estimated_cost_usd=0.5,
                              cost_status="estimated", billing_provider="first", model="m1")
    store.update_token_counts("s", input_tokens=1, estimated_cost_usd=0.25, actual_cost_usd=1.0,
                              billing_provider="second", model="m2", cost_status="final")
    row = store.get_session("s")
    assert (row["input_tokens"], row["output_tokens"]) == (11, 5)
    assert row["estimated_cost_usd"] == pytest.approx(0.75) and row["actual_cost_usd"] == 1.0
    assert (row["billing_provider"], row["model"], row["cost_status"]) == ("first", "m1", "final")
    store.update_token_counts("s", input_tokens=3, absolute=True)
    row = store.get_session("s")
    assert (row["input_tokens"], row["output_tokens"], row["estimated_cost_usd"]) == (3, 0, 0)
    assert row["actual_cost_usd"] == 1.0


def test_an_explicit_none_token_writes_null(store):
    store.create_session("s", "cli")
    store.update_token_counts("s", input_tokens=None)
    assert store.get_session("s")["input_tokens"] is None
    store.update_token_counts("s", input_tokens=4)
    assert store.get_session("s")["input_tokens"] is None
    store.update_token_counts("s", input_tokens=4, absolute=True)
    assert store.get_session("s")["input_tokens"] == 4



def test_a_counter_addition_past_2_63_is_refused_and_nothing_applied(store):
    store.create_session("s", "cli")
    near = 2**63 - 808
    run_sql(store.db_path, f"UPDATE sessions SET input_tokens = {near}, output_tokens = 5 WHERE id = 's'")
    exact = "SELECT CAST(input_tokens AS TEXT), CAST(output_tokens AS TEXT) FROM sessions WHERE id = 's'"
    store.update_token_counts("s", input_tokens=807)
    assert tuple(run_sql(store.db_path, exact)[0]) == (str(2**63 - 1), "5")
    with pytest.raises(InvalidArgumentError) as caught:
        store.update_token_counts("s", input_tokens=1, output_tokens=1)
    assert caught.value.code == "INVALID_ARGUMENT" and "2^63 - 1" in str(caught.value)
    assert tuple(run_sql(store.db_path, exact)[0]) == (str(2**63 - 1), "5"), "nothing of it applied"

# -- titles ------------------------------------------------------------------------------------

def test_titles_set_get_clear_and_in_use(store):
    store.create_session("a", "cli")
    store.create_session("b", "cli")
    assert store.set_session_title("a", "  my\tproject  ") is True
    assert store.get_session_title("a") == "my project"
    assert store.set_session_title("a", "my project") is True
    assert store.set_session_title("missing", "t") is False
    with pytest.raises(ValueError) as caught:
        store.set_session_title("b", "my project")
    assert isinstance(caught.value, TitleInUseError)
    assert str(caught.value) == "Title 'my project' is already in use by session a"
    assert store.get_session_by_title("my project")["id"] == "a"
    assert store.get_session_by_title("My Project") is None
    assert store.set_session_title("a", "\u200b") is True
    assert store.get_session_title("a") is None


def test_a_title_over_100_characters_is_a_value_error_with_the_exact_message(store):
    store.create_session("a", "cli")
    assert store.set_session_title("a", "x" * 100) is True
    with pytest.raises(ValueError) as caught:
        store.set_session_title("a", "y" * 101)
    assert isinstance(caught.value, TitleTooLongError) and caught.value.code == "TITLE_TOO_LONG"
    assert str(caught.value) == "Title too long (101 chars, max 100)"
    assert store.get_session_title("a") == "x" * 100


def test_title_lineage_and_resolution(store):
    assert store.get_next_title_in_lineage("my project") == "my project"
    store.create_session("a", "cli")
    store.set_session_title("a", "my project")
    assert store.get_next_title_in_lineage("my project") == "my project #2"
    assert store.resolve_session_by_title("my project") == "a"
    store.create_session("b", "cli")
    store.set_session_title("b", "my project #2")
    store.create_session("c", "cli")
    store.set_session_title("c", "my project #3")
    assert store.get_next_title_in_lineage("my project") == "my project #4"
    assert store.get_next_title_in_lineage("my project #2") == "my project #4"
    assert store.resolve_session_by_title("my project") == "c"
    assert store.resolve_session_by_title("nothing") is None


# -- listing and compression -------------------------------------------------------------------

def test_compression_tip_follows_the_chain(store):
    assert store.get_compression_tip("unknown") == "unknown"
    store.create_session("root", "cli")
    store.end_session("root", "compression")
    store.create_session("tip", "cli", parent_session_id="root")
    assert store.get_compression_tip("root") == "tip"
    assert store.get_compression_tip("tip") == "tip"


def test_list_sessions_rich_rows_preview_children_and_projection(store):
    store.create_session("root", "cli")
    store.append_message("root", "user", "first question\nwith a newline")
    store.end_session("root", "compression")
    store.create_session("tip", "cli", parent_session_id="root")
    store.append_message("tip", "user", "x" * 70)
    store.create_session("other", "telegram")
    rows = store.list_sessions_rich()
    assert [r["id"] for r in rows] == ["other", "tip"]
    projected = rows[1]
    assert projected["_lineage_root_id"] == "root"
    assert projected["preview"] == "x" * 60 + "..."
    assert set(rows[0]) == SESSION_KEYS | {"last_active", "preview"}
    assert rows[0]["preview"] == "" and rows[0]["last_active"] == rows[0]["started_at"]
    plain = store.list_sessions_rich(project_compression_tips=False, source="cli")
    assert [r["id"] for r in plain] == ["root"] and plain[0]["preview"] == "first question with a newline"
    children = store.list_sessions_rich(include_children=True, exclude_sources=["telegram"])
    assert sorted(r["id"] for r in children) == ["root", "tip"]
    assert len(store.list_sessions_rich(limit=1, offset=1)) == 1


# -- messages ----------------------------------------------------------------------------------

def test_append_message_stores_every_field_and_counts_tool_calls(store):
    store.create_session("s", "cli")
    first = store.append_message("s", "assistant", "answer", tool_calls=[{"id": "c1"}, {"id": "c2"}],
                                 token_count=7, finish_reason="stop", reasoning="because",
                                 reasoning_details=[{"r": 1}], codex_reasoning_items=[{"c": 1}])
    second = store.append_message("s", "tool", "result", tool_name="grep", tool_call_id="c1")
    assert second > first
    messages = store.get_messages("s")
    assert set(messages[0]) == MESSAGE_KEYS
    assert messages[0]["tool_calls"] == [{"id": "c1"}, {"id": "c2"}]
    assert messages[0]["reasoning_details"] == '[{"r": 1}]'
    assert (messages[1]["tool_name"], messages[1]["tool_call_id"]) == ("grep", "c1")
    row = store.get_session("s")
    assert (row["message_count"], row["tool_call_count"]) == (2, 2)


def test_append_to_a_missing_session_is_an_integrity_error(store):
    with pytest.raises(sqlite3.IntegrityError) as caught:
        store.append_message("missing", "user", "hi")
    assert isinstance(caught.value, ConstraintError) and caught.value.code == "CONSTRAINT"
    assert store.message_count() == 0


def test_get_messages_as_conversation(store):
    store.create_session("s", "cli")
    store.append_message("s", "user", "hi")
    store.append_message("s", "assistant", None, tool_calls=[{"id": "t"}], reasoning="think")
    store.append_message("s", "tool", "out", tool_call_id="t", tool_name="ls", reasoning="ignored")
    assert store.get_messages_as_conversation("s") == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "t"}], "reasoning": "think"},
        {"role": "tool", "content": "out", "tool_call_id": "t", "tool_name": "ls"},
    ]


def test_clear_messages_and_message_count(store):
    store.create_session("a", "cli")
    store.create_session("b", "cli")
    store.set_session_title("a", "kept")
    store.update_token_counts("a", input_tokens=9)
    store.append_message("a", "user", "x", tool_calls={"one": 1})
    store.append_message("b", "user", "y")
    assert store.message_count() == 2 and store.message_count(session_id="a") == 1
    store.clear_messages("a")
    row = store.get_session("a")
    assert (row["message_count"], row["tool_call_count"], row["input_tokens"], row["title"]) == (0, 0, 9, "kept")
    assert store.get_messages("a") == [] and store.message_count() == 1


# -- search ------------------------------------------------------------------------------------

def test_search_messages_hits_filters_and_context(store):
    store.create_session("s", "cli")
    store.create_session("t", "telegram")
    store.append_message("s", "user", "before")
    store.append_message("t", "user", "deploy the chat-send service")
    store.append_message("s", "assistant", "deploy the chat-send service now")
    store.append_message("s", "user", "after")
    hits = store.search_messages("chat-send")
    assert len(hits) == 2
    assert set(hits[0]) == {"id", "session_id", "role", "snippet", "timestamp", "tool_name", "source",
                            "model", "session_started", "context"}
    mine = [h for h in hits if h["session_id"] == "s"][0]
    assert ">>>" in mine["snippet"]
    assert [c["content"] for c in mine["context"]] == ["before", "deploy the chat-send service now", "after"]
    assert store.search_messages("deploy", source_filter=[]) == []
    assert [h["session_id"] for h in store.search_messages("deploy", source_filter=["telegram"])] == ["t"]
    assert [h["session_id"] for h in store.search_messages("deploy", exclude_sources=["telegram"])] == ["s"]
    assert [h["role"] for h in store.search_messages("deploy", role_filter=["assistant"])] == ["assistant"]
    assert len(store.search_messages("deploy", limit=1, offset=1)) == 1
    assert store.search_messages("   ") == [] and store.search_messages("***") == []
    for hostile in ['"unbalanced', "AND OR NOT", "(((", "a:b", "NEAR(", "^*"]:
        assert isinstance(store.search_messages(hostile), list)


def test_cjk_queries_use_the_fallback(store):
    store.create_session("s", "cli")
    store.append_message("s", "user", "我们今天讨论数据库的设计")
    store.append_message("s", "user", "100%_done 完成")
    hits = store.search_messages("数据库")
    assert len(hits) == 1 and "数据库" in hits[0]["snippet"]
    assert [h["snippet"] for h in store.search_messages("%_done 完")] == ["100%_done 完成"]
    assert store.search_messages("%完") == []


def test_static_helpers_exist_with_the_reference_names(store):
    assert store.sanitize_title("  a \x00 b ") == "a b"
    assert store._sanitize_fts5_query("C++") == "C"
    assert store._contains_cjk("日本") is True and store._contains_cjk("abc") is False


# -- export and removal ------------------------------------------------------------------------

def test_export_session_and_export_all(store):
    assert store.export_session("missing") is None
    assert store.export_all() == []
    store.create_session("old", "cli")
    store.append_message("old", "user", "one")
    run_sql(store.db_path, "UPDATE sessions SET started_at = 1 WHERE id = 'old'")
    store.create_session("new", "telegram", parent_session_id="old")
    exported = store.export_session("old")
    assert set(exported) == SESSION_KEYS | {"messages"} and exported["messages"] == store.get_messages("old")
    assert [s["id"] for s in store.export_all()] == ["new", "old"]
    assert [s["id"] for s in store.export_all(source="cli")] == ["old"]


def test_iter_export_all_streams_many_sessions_once_each_and_can_stop_early(store):
    for i in range(230):
        store.create_session(f"s{i:03d}", "cli")
    seen = [s["id"] for s in store.iter_export_all()]
    assert len(seen) == 230 and len(set(seen)) == 230
    iterator = store.iter_export_all()
    next(iterator)
    iterator.close()
    assert store.session_count() == 230


def test_delete_session_orphans_children(store):
    store.create_session("a", "cli")
    store.create_session("b", "cli", parent_session_id="a")
    store.create_session("c", "cli", parent_session_id="b")
    store.append_message("a", "user", "gone")
    assert store.delete_session("a") is True
    assert store.delete_session("a") is False
    assert store.get_session("b")["parent_session_id"] is None
    assert store.get_session("c")["parent_session_id"] == "b"
    assert store.message_count() == 0


def test_prune_sessions_chain_active_and_source(store):
    for sid, parent in (("A", None), ("B", "A"), ("C", "B"), ("D", "C")):
        store.create_session(sid, "cli", parent_session_id=parent)
    backdate(store, "A", 200)
    backdate(store, "B", 100)
    store.create_session("active", "cli")
    backdate(store, "active", 300, ended=False)
    store.create_session("tg", "telegram")
    backdate(store, "tg", 200)
    assert store.prune_sessions(source="cli") == 2
    assert store.get_session("C")["parent_session_id"] is None
    assert store.get_session("D")["parent_session_id"] == "C"
    assert store.get_session("active") is not None
    assert store.prune_sessions(older_than_days=150) == 1


# -- lifecycle and errors ----------------------------------------------------------------------

def test_close_is_idempotent_and_calls_after_it_fail_closed(store):
    store.close()
    store.close()
    with pytest.raises(ClosedError) as caught:
        store.get_session("x")
    assert caught.value.code == "CLOSED"
    with pytest.raises(SessionDBError):
        store.export_all()


def sqlite3_refusal(value):
    """The class this interpreter's sqlite3 raises binding the value (the reference's error)."""
    import sqlite3

    try:
        sqlite3.connect(":memory:").execute("SELECT ?", (value,))
    except Exception as err:  # noqa: BLE001 - whichever class it is, is the expectation
        return type(err)
    raise AssertionError(f"sqlite3 binds {value!r}")


def test_arguments_are_taken_and_stored_as_the_reference_binds_them(store):
    # An int id is stored as the text '42' (TEXT affinity) and found by either spelling; the
    # reference returns the id it was given.
    assert store.create_session(42, "cli") == 42
    assert store.get_session(42)["id"] == store.get_session("42")["id"] == "42"
    store.append_message(42, "user", 7, token_count="5")
    store.append_message("42", "assistant", "two", token_count=3.0)
    contents = [(m["content"], m["token_count"]) for m in store.get_messages(42)]
    assert contents == [("7", 5), ("two", 3)]
    store.update_token_counts(42, input_tokens="5", output_tokens=2.0)
    row = store.get_session("42")
    assert (row["input_tokens"], row["output_tokens"]) == (5, 2)
    # No row has a NULL id: the reference's WHERE id = NULL results, without an error.
    assert store.get_session(None) is None and store.get_messages(None) == []
    assert store.end_session(None, "x") is None and store.delete_session(None) is False
    assert store.search_messages(None) == [] and store.search_messages("   ") == []
    # SQLite's LIMIT -1 is no limit; a negative OFFSET is 0.
    assert [s["id"] for s in store.list_sessions_rich(limit=-1, offset=-3)] == ["42"]
    assert len(store.search_sessions(limit=-1)) == 1


def test_arguments_the_reference_refuses_raise_its_classes_and_write_nothing(store):
    import sqlite3

    store.create_session("s", "cli")
    for value in ({}, object()):
        with pytest.raises(sqlite3_refusal(value)) as caught:
            store.create_session(value, "cli")
        assert isinstance(caught.value, ValueError) and caught.value.code == "INVALID_ARGUMENT"
        with pytest.raises(sqlite3_refusal(value)):
            store.append_message("s", "user", value)
    with pytest.raises(OverflowError):
        store.create_session(2 ** 64, "cli")
    with pytest.raises(TypeError):
        store.set_session_title("s", 5)  # the reference's title cleaning runs re.sub on it
    with pytest.raises(sqlite3.IntegrityError):
        store.append_message(None, "user", "x")  # messages.session_id is NOT NULL
    with pytest.raises(sqlite3.IntegrityError):
        store.create_session("t", None)  # sessions.source is NOT NULL
    with pytest.raises(TypeError):
        store.prune_sessions(older_than_days="5")
    assert store.session_count() == 1 and store.message_count() == 0


# -- idempotency keys (issue 25): the same key twice in every mode, a key reused with other arguments --
# The shared daemon keeps its keys table across tests: each test's keys are its own (a uuid).

def test_the_same_key_twice_is_one_write_and_the_first_result(store):
    k = uuid.uuid4().hex
    store.create_session("s", "cli", idempotency_key=f"{k}-create")
    first = store.append_message("s", "user", "once", timestamp=1764970000.25, idempotency_key=f"{k}-m")
    assert store.append_message("s", "user", "once", timestamp=1764970000.25, idempotency_key=f"{k}-m") == first
    store.update_token_counts("s", input_tokens=5, estimated_cost_usd=0.5, idempotency_key=f"{k}-t")
    store.update_token_counts("s", input_tokens=5, estimated_cost_usd=0.5, idempotency_key=f"{k}-t")
    assert store.pop_message("s", idempotency_key=f"{k}-pop")["id"] == first
    assert store.pop_message("s", idempotency_key=f"{k}-pop")["id"] == first, "the first result, nothing more popped"
    session = store.get_session("s")
    assert (session["message_count"], session["input_tokens"], session["estimated_cost_usd"]) == (0, 5, 0.5)


def test_a_key_reused_with_other_arguments_is_idempotency_conflict_and_applies_nothing(store):
    k = uuid.uuid4().hex
    store.create_session("s", "cli")
    first = store.append_message("s", "user", "one", idempotency_key=k)
    for call in (lambda: store.append_message("s", "user", "two", idempotency_key=k),
                 lambda: store.append_message("s", "user", "one", timestamp=1764970000.0, idempotency_key=k),
                 lambda: store.end_session("s", "done", idempotency_key=k)):
        with pytest.raises(IdempotencyConflictError):
            call()
    assert [m["id"] for m in store.get_messages("s")] == [first]
    assert store.get_session("s")["ended_at"] is None


# -- where the engines differ (docs/postgres.md "What differs from SQLite"; test/contract/engine-differences-contract.ts)

def test_rank_gives_the_same_hits_ordered_by_bm25_or_ts_rank(store):
    store.create_session("s", "cli")
    once = store.append_message("s", "user", "deploy " + "filler " * 30)
    thrice = store.append_message("s", "user", "deploy deploy deploy")
    hits = [h["id"] for h in store.search_messages("deploy")]
    assert sorted(hits) == [once, thrice], "the same hits on both"
    assert hits[0] == thrice  # both rank the dense text first here; on other texts orders can differ


def test_snippets_are_marked_on_both_and_cut_with_dots_on_sqlite_only(store):
    store.create_session("s", "cli")
    store.append_message("s", "user", "lead " * 60 + "needle" + " tail" * 60)
    [hit] = store.search_messages("needle")
    assert ">>>needle<<<" in hit["snippet"]
    if engine_of(store.db_path) == "sqlite":  # FTS5: a 40-token window, "..." where cut
        assert hit["snippet"].startswith("...") and hit["snippet"].endswith("...")
    else:  # ts_headline: up to 40 words, no "..."
        assert "..." not in hit["snippet"] and len(hit["snippet"].split()) <= 41


def test_diacritics_are_folded_by_sqlite_only(store):
    store.create_session("s", "cli")
    cafe = store.append_message("s", "user", "un café noir")
    assert [h["id"] for h in store.search_messages("café")] == [cafe], "the exact word on both"
    folded = [h["id"] for h in store.search_messages("cafe")]
    assert folded == ([cafe] if engine_of(store.db_path) == "sqlite" else [])


def test_nul_in_text_is_stored_by_sqlite_and_refused_by_postgres_as_a_value_error(store):
    store.create_session("s", "cli")
    if engine_of(store.db_path) == "sqlite":
        store.append_message("s", "user", "a\0b")
        assert store.get_messages("s")[0]["content"] == "a\0b"
    else:  # PostgreSQL's text cannot hold U+0000
        with pytest.raises(ValueError) as caught:
            store.append_message("s", "user", "a\0b")
        assert caught.value.code == "INVALID_ARGUMENT"
        assert store.message_count() == 0, "nothing was written"

"""The public surface is the reference's: the same method names, parameters and defaults."""
from __future__ import annotations

import inspect

from sessiondb import AsyncSessionDB, SessionDB

# The reference class at schema 6 (hermes_state.SessionDB), parameters as it declares them.
REFERENCE = """
close()
create_session(session_id, source, model=None, model_config=None, system_prompt=None, user_id=None, parent_session_id=None)
end_session(session_id, end_reason)
reopen_session(session_id)
update_system_prompt(session_id, system_prompt)
update_token_counts(session_id, input_tokens=0, output_tokens=0, model=None, cache_read_tokens=0, cache_write_tokens=0, reasoning_tokens=0, estimated_cost_usd=None, actual_cost_usd=None, cost_status=None, cost_source=None, pricing_version=None, billing_provider=None, billing_base_url=None, billing_mode=None, absolute=False)
ensure_session(session_id, source="unknown", model=None)
get_session(session_id)
resolve_session_id(session_id_or_prefix)
set_session_title(session_id, title)
get_session_title(session_id)
get_session_by_title(title)
resolve_session_by_title(title)
get_next_title_in_lineage(base_title)
get_compression_tip(session_id)
list_sessions_rich(source=None, exclude_sources=None, limit=20, offset=0, include_children=False, project_compression_tips=True)
append_message(session_id, role, content=None, tool_name=None, tool_calls=None, tool_call_id=None, token_count=None, finish_reason=None, reasoning=None, reasoning_details=None, codex_reasoning_items=None)
get_messages(session_id)
get_messages_as_conversation(session_id)
search_messages(query, source_filter=None, exclude_sources=None, role_filter=None, limit=20, offset=0)
search_sessions(source=None, limit=20, offset=0)
session_count(source=None)
message_count(session_id=None)
export_session(session_id)
export_all(source=None)
clear_messages(session_id)
delete_session(session_id)
prune_sessions(older_than_days=90, source=None)
"""
STATIC = {"sanitize_title": ["title"], "_sanitize_fts5_query": ["query"], "_contains_cjk": ["text"]}


def reference_signatures():
    for line in REFERENCE.strip().splitlines():
        name, params = line.split("(", 1)
        namespace = {}
        exec(f"def {name}(self, {params}: pass", namespace)
        yield name, inspect.signature(namespace[name])


WRITES = {"create_session", "end_session", "reopen_session", "update_system_prompt", "update_token_counts",
          "ensure_session", "set_session_title", "append_message", "clear_messages", "delete_session",
          "prune_sessions", "pop_message"}


# Keyword-only parameters of sessiondb's own, after the reference's: a write's idempotency_key, and
# append_message's timestamp (issue 25: a replayed write keeps the time it was written).
OWN_KEYWORDS = {"idempotency_key", "timestamp"}


def shape(signature):
    """The reference's parameters, without sessiondb's own keyword-only ones (OWN_KEYWORDS)."""
    return [(p.name, p.default, p.kind) for p in signature.parameters.values()
            if not (p.name in OWN_KEYWORDS and p.kind == inspect.Parameter.KEYWORD_ONLY)]


def test_methods_parameters_and_defaults_are_the_references():
    for cls in (SessionDB, AsyncSessionDB):
        for name, expected in reference_signatures():
            assert shape(inspect.signature(getattr(cls, name))) == shape(expected), f"{cls.__name__}.{name}"
        for name in WRITES:
            key = inspect.signature(getattr(cls, name)).parameters["idempotency_key"]
            assert (key.kind, key.default) == (inspect.Parameter.KEYWORD_ONLY, None), f"{cls.__name__}.{name}"
        stamp = inspect.signature(cls.append_message).parameters["timestamp"]
        assert (stamp.kind, stamp.default) == (inspect.Parameter.KEYWORD_ONLY, None), cls.__name__
        for name, params in STATIC.items():
            assert isinstance(inspect.getattr_static(cls, name), staticmethod), name
            assert list(inspect.signature(getattr(cls, name)).parameters) == params


def test_the_constructor_takes_the_reference_db_path_first_then_keywords():
    for cls in (SessionDB, AsyncSessionDB):
        params = inspect.signature(cls).parameters
        assert list(params) == ["db_path", "socket_path", "timeout", "autostart", "autostart_idle_exit", "spool"]
        assert params["spool"].default is False
        assert params["db_path"].default is None
        assert params["socket_path"].kind is inspect.Parameter.KEYWORD_ONLY
        assert (params["timeout"].default, params["autostart"].default) == (30.0, True)
        assert params["autostart_idle_exit"].default == 30.0

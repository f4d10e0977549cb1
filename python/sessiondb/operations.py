"""The public methods of the reference ``hermes_state.SessionDB`` (schema 6), with its names,
parameters and defaults, each mapped mechanically onto one daemon operation (SPEC 2). The sync
and the asyncio class share them: ``_call`` returns the result or an awaitable of it."""
from __future__ import annotations

from typing import Any, Optional

import math

from .errors import ConstraintError, InvalidArgumentError
from .protocol import optional, with_json
from .reference_args import addend, integer, limit as limit_arg, number, offset as offset_arg, text, text_list
from .text import MAX_TITLE_LENGTH, contains_cjk, sanitize_fts5_query, sanitize_title

def not_null(column: str) -> ConstraintError:
    """What SQLite tells the reference when it inserts NULL into a NOT NULL column."""
    return ConstraintError("CONSTRAINT", f"NOT NULL constraint failed: {column}")


def no_session_id() -> ConstraintError:
    """``create_session(None, …)`` / ``ensure_session(None)``: the reference inserts a row whose id
    is NULL (SQLite lets a TEXT PRIMARY KEY hold NULL), a row no later call can reach, and every
    such call adds another. Refused instead, as SQLite's NOT NULL (``sqlite3.IntegrityError``)."""
    return ConstraintError(
        "CONSTRAINT", "NOT NULL constraint failed: sessions.id (session_id is None: the reference would "
        "insert a session no call can reach; sessiondb refuses it)")


def seconds(value: Any, name: str) -> Any:
    """A time a row records (``append_message``'s ``timestamp``): Unix seconds, an int or float,
    finite and above 0, as the daemon checks it; None is none (the time the write is applied)."""
    if value is None:
        return None
    if type(value) not in (int, float) or not math.isfinite(value) or value <= 0:
        raise InvalidArgumentError(
            "INVALID_ARGUMENT", f"{name} must be a finite number of seconds since the epoch, greater than 0, got {value!r}")
    return value


def bound_counts(usage: dict) -> dict:
    """A count the reference stores other than as an integer (a non-whole number, a text kept by
    ``col = ?``, bytes) goes as ``<key>Bound``, which the engine applies with the reference's own
    SQL (docs/protocol.md); whole numbers and None keep the integer field."""
    for key in ("inputTokens", "outputTokens", "cacheReadTokens", "cacheWriteTokens", "reasoningTokens"):
        value = usage[key]
        if value is not None and type(value) is not int:
            usage[key + "Bound"] = usage.pop(key)
    return usage


class Operations:
    """Mixed into SessionDB and AsyncSessionDB, which provide ``_call(op, args, key=None)``
    (the op's kind, read or write, is protocol.json's; ``key``: a write's ``idempotency_key``,
    see idempotency.py) and
    ``_result(value)`` (a result known without asking the daemon, as ``_call`` returns one).

    Arguments go through the reference's rules first (reference_args): what sqlite3 would bind
    and store for the reference is what is sent. A session id of None matches no row in the
    reference's ``WHERE id = ?``, so those calls give the reference's "no such session" result
    without a round trip."""

    # -- sessions ---------------------------------------------------------------------------

    def create_session(self, session_id: str, source: str, model: Optional[str] = None,
                       model_config: Optional[dict] = None, system_prompt: Optional[str] = None,
                       user_id: Optional[str] = None, parent_session_id: Optional[str] = None, *, idempotency_key: Optional[str] = None) -> Any:
        if session_id is None:
            raise no_session_id()
        if source is None:
            raise not_null("sessions.source")
        opts = optional(model=text(model, "model"), systemPrompt=text(system_prompt, "system_prompt"),
                        userId=text(user_id, "user_id"), parentSessionId=text(parent_session_id, "parent_session_id"))
        with_json(opts, "modelConfig", model_config)
        # The reference returns the id it was given (an int stays an int).
        return self._then(self._call("createSession", [text(session_id, "session_id"), text(source, "source"), opts],
                                     idempotency_key),
                          session_id)

    def end_session(self, session_id: str, end_reason: str, *, idempotency_key: Optional[str] = None) -> Any:
        if session_id is None:
            return self._result(None)
        return self._call("endSession", [text(session_id, "session_id"), text(end_reason, "end_reason")], idempotency_key)

    def reopen_session(self, session_id: str, *, idempotency_key: Optional[str] = None) -> Any:
        if session_id is None:
            return self._result(None)
        return self._call("reopenSession", [text(session_id, "session_id")], idempotency_key)

    def update_system_prompt(self, session_id: str, system_prompt: str, *, idempotency_key: Optional[str] = None) -> Any:
        if session_id is None:
            return self._result(None)
        return self._call("updateSystemPrompt", [text(session_id, "session_id"), text(system_prompt, "system_prompt")], idempotency_key)

    def update_token_counts(self, session_id: str, input_tokens: Optional[int] = 0,
                            output_tokens: Optional[int] = 0, model: Optional[str] = None,
                            cache_read_tokens: Optional[int] = 0, cache_write_tokens: Optional[int] = 0,
                            reasoning_tokens: Optional[int] = 0,
                            estimated_cost_usd: Optional[float] = None,
                            actual_cost_usd: Optional[float] = None, cost_status: Optional[str] = None,
                            cost_source: Optional[str] = None, pricing_version: Optional[str] = None,
                            billing_provider: Optional[str] = None,
                            billing_base_url: Optional[str] = None,
                            billing_mode: Optional[str] = None, absolute: bool = False, *, idempotency_key: Optional[str] = None) -> Any:
        # An explicit None token count is sent as null: it writes NULL, as the reference's SQL does.
        # Counts are added (``col + ?``) or, with absolute, stored (``col = ?``), each by SQLite's rule.
        count = integer if absolute else addend
        usage = {
            "inputTokens": count(input_tokens, "input_tokens"), "outputTokens": count(output_tokens, "output_tokens"),
            "cacheReadTokens": count(cache_read_tokens, "cache_read_tokens"),
            "cacheWriteTokens": count(cache_write_tokens, "cache_write_tokens"),
            "reasoningTokens": count(reasoning_tokens, "reasoning_tokens"),
            **optional(model=text(model, "model"), estimatedCostUsd=number(estimated_cost_usd, "estimated_cost_usd"),
                       actualCostUsd=number(actual_cost_usd, "actual_cost_usd"),
                       costStatus=text(cost_status, "cost_status"), costSource=text(cost_source, "cost_source"),
                       pricingVersion=text(pricing_version, "pricing_version"),
                       billingProvider=text(billing_provider, "billing_provider"),
                       billingBaseUrl=text(billing_base_url, "billing_base_url"),
                       billingMode=text(billing_mode, "billing_mode")),
        }
        if session_id is None:
            return self._result(None)
        return self._call("updateTokenCounts",
                          [text(session_id, "session_id"), bound_counts(usage), {"absolute": bool(absolute)}],
                          idempotency_key)

    def ensure_session(self, session_id: str, source: str = "unknown", model: Optional[str] = None, *, idempotency_key: Optional[str] = None) -> Any:
        if session_id is None:
            raise no_session_id()
        if source is None:
            raise not_null("sessions.source")
        return self._call("ensureSession", [text(session_id, "session_id"), text(source, "source"), text(model, "model")], idempotency_key)

    def get_session(self, session_id: str) -> Any:
        if session_id is None:
            return self._result(None)
        return self._call("getSession", [text(session_id, "session_id")])

    def resolve_session_id(self, session_id_or_prefix: str) -> Any:
        if session_id_or_prefix is None:
            # The reference: get_session(None) finds nothing, then None.replace(...).
            raise AttributeError("'NoneType' object has no attribute 'replace'")
        return self._call("resolveSessionId", [text(session_id_or_prefix, "session_id_or_prefix")])

    # -- titles -----------------------------------------------------------------------------

    MAX_TITLE_LENGTH = MAX_TITLE_LENGTH
    sanitize_title = staticmethod(sanitize_title)

    def set_session_title(self, session_id: str, title: Optional[str], *, idempotency_key: Optional[str] = None) -> Any:
        # The reference cleans the title first: a title that is no string raises its TypeError,
        # one too long its ValueError, before anything else.
        sanitize_title(title)
        if session_id is None:
            return self._result(False)
        return self._call("setSessionTitle", [text(session_id, "session_id"), title if title else None], idempotency_key)

    def get_session_title(self, session_id: str) -> Any:
        if session_id is None:
            return self._result(None)
        return self._call("getSessionTitle", [text(session_id, "session_id")])

    def get_session_by_title(self, title: str) -> Any:
        if title is None:
            return self._result(None)
        return self._call("getSessionByTitle", [text(title, "title")])

    def resolve_session_by_title(self, title: str) -> Any:
        return self._call("resolveSessionByTitle", [text(title, "title")])

    def get_next_title_in_lineage(self, base_title: str) -> Any:
        return self._call("getNextTitleInLineage", [text(base_title, "base_title")])

    # -- listing ----------------------------------------------------------------------------

    def get_compression_tip(self, session_id: str) -> Any:
        if session_id is None:
            return self._result(None)
        return self._call("getCompressionTip", [text(session_id, "session_id")])

    def list_sessions_rich(self, source: Optional[str] = None, exclude_sources: Optional[list] = None,
                           limit: int = 20, offset: int = 0, include_children: bool = False,
                           project_compression_tips: bool = True) -> Any:
        opts = optional(source=text(source, "source") if source else None,
                        excludeSources=text_list(exclude_sources, "exclude_sources"),
                        limit=limit_arg(limit, "limit"), offset=offset_arg(offset, "offset"),
                        includeChildren=bool(include_children), projectCompressionTips=bool(project_compression_tips))
        return self._call("listSessionsRich", [opts])

    # -- messages ---------------------------------------------------------------------------

    def append_message(self, session_id: str, role: str, content: Optional[str] = None,
                       tool_name: Optional[str] = None, tool_calls: Any = None,
                       tool_call_id: Optional[str] = None, token_count: Optional[int] = None,
                       finish_reason: Optional[str] = None, reasoning: Optional[str] = None,
                       reasoning_details: Any = None, codex_reasoning_items: Any = None, *, timestamp: Optional[float] = None,
                       idempotency_key: Optional[str] = None) -> Any:
        """``timestamp`` (not in the reference): when the message was written, in Unix seconds
        (default: when the write is applied), so a replayed write sorts where it was written."""
        stamped = seconds(timestamp, "timestamp")
        if session_id is None:
            raise not_null("messages.session_id")
        if role is None:
            raise not_null("messages.role")
        msg = optional(role=text(role, "role"), content=text(content, "content"), toolName=text(tool_name, "tool_name"),
                       toolCallId=text(tool_call_id, "tool_call_id"), tokenCount=integer(token_count, "token_count"),
                       finishReason=text(finish_reason, "finish_reason"), reasoning=text(reasoning, "reasoning"),
                       timestamp=stamped)
        if "tokenCount" in msg and type(msg["tokenCount"]) is not int:  # 5.5, "abc", bytes: as the reference stores them
            msg["tokenCountBound"] = msg.pop("tokenCount")
        with_json(msg, "toolCalls", tool_calls)
        with_json(msg, "reasoningDetails", reasoning_details)
        with_json(msg, "codexReasoningItems", codex_reasoning_items)
        return self._call("appendMessage", [text(session_id, "session_id"), msg], idempotency_key)

    def get_messages(self, session_id: str) -> Any:
        if session_id is None:
            return self._result([])
        return self._call("getMessages", [text(session_id, "session_id")])

    def get_messages_as_conversation(self, session_id: str) -> Any:
        if session_id is None:
            return self._result([])
        return self._call("getMessagesAsConversation", [text(session_id, "session_id")])

    # -- search -----------------------------------------------------------------------------

    _sanitize_fts5_query = staticmethod(sanitize_fts5_query)
    _contains_cjk = staticmethod(contains_cjk)

    def search_messages(self, query: str, source_filter: Optional[list] = None,
                        exclude_sources: Optional[list] = None, role_filter: Optional[list] = None,
                        limit: int = 20, offset: int = 0) -> Any:
        # The reference: ``if not query or not query.strip(): return []``.
        if not query or not query.strip():
            return self._result([])
        opts = optional(sourceFilter=text_list(source_filter, "source_filter"),
                        excludeSources=text_list(exclude_sources, "exclude_sources"),
                        roleFilter=text_list(role_filter, "role_filter"),
                        limit=limit_arg(limit, "limit"), offset=offset_arg(offset, "offset"))
        return self._call("searchMessages", [text(query, "query"), opts])

    def search_sessions(self, source: Optional[str] = None, limit: int = 20, offset: int = 0) -> Any:
        opts = optional(source=text(source, "source") if source else None, limit=limit_arg(limit, "limit"),
                        offset=offset_arg(offset, "offset"))
        return self._call("searchSessions", [opts])

    # The reference's counts filter only on a truthy argument (``if source:``).
    def session_count(self, source: Optional[str] = None) -> Any:
        return self._call("sessionCount", [optional(source=text(source, "source") if source else None)])

    def message_count(self, session_id: Optional[str] = None) -> Any:
        return self._call("messageCount", [optional(sessionId=text(session_id, "session_id") if session_id else None)])

    # -- export and removal -----------------------------------------------------------------

    def export_session(self, session_id: str) -> Any:
        if session_id is None:
            return self._result(None)
        return self._call("exportSession", [text(session_id, "session_id")])

    def clear_messages(self, session_id: str, *, idempotency_key: Optional[str] = None) -> Any:
        if session_id is None:
            return self._result(None)
        return self._call("clearMessages", [text(session_id, "session_id")], idempotency_key)

    def pop_message(self, session_id: str, *, idempotency_key: Optional[str] = None) -> Any:
        """Not in the reference: removes the session's newest message and returns it (as
        ``get_messages`` shows it), or None when it has none; the counters follow. One write."""
        return self._call("popMessage", [session_id], idempotency_key)

    def delete_session(self, session_id: str, *, idempotency_key: Optional[str] = None) -> Any:
        if session_id is None:
            return self._result(False)
        return self._call("deleteSession", [text(session_id, "session_id")], idempotency_key)

    def prune_sessions(self, older_than_days: float = 90, source: Optional[str] = None, *, idempotency_key: Optional[str] = None) -> Any:
        # The reference computes ``time.time() - older_than_days * 86400`` in Python first, so
        # what that arithmetic refuses raises its TypeError here too.
        0.0 - older_than_days * 86400
        opts = optional(olderThanDays=float(older_than_days), source=text(source, "source") if source else None)
        return self._call("pruneSessions", [opts], idempotency_key)

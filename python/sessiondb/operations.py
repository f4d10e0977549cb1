"""The public methods of the reference ``hermes_state.SessionDB`` (schema 6), with its names,
parameters and defaults, each mapped mechanically onto one daemon operation (SPEC 2). The sync
and the asyncio class share them: ``_call`` returns the result or an awaitable of it."""
from __future__ import annotations

from typing import Any, Optional

from .protocol import optional
from .text import contains_cjk, sanitize_fts5_query, sanitize_title

READ = "read"
WRITE = "write"


class Operations:
    """Mixed into SessionDB and AsyncSessionDB, which provide ``_call(op, kind, args)``."""

    # -- sessions ---------------------------------------------------------------------------

    def create_session(self, session_id: str, source: str, model: Optional[str] = None,
                       model_config: Optional[dict] = None, system_prompt: Optional[str] = None,
                       user_id: Optional[str] = None, parent_session_id: Optional[str] = None) -> Any:
        opts = optional(model=model, modelConfig=model_config, systemPrompt=system_prompt,
                        userId=user_id, parentSessionId=parent_session_id)
        return self._call("createSession", WRITE, [session_id, source, opts])

    def end_session(self, session_id: str, end_reason: str) -> Any:
        return self._call("endSession", WRITE, [session_id, end_reason])

    def reopen_session(self, session_id: str) -> Any:
        return self._call("reopenSession", WRITE, [session_id])

    def update_system_prompt(self, session_id: str, system_prompt: str) -> Any:
        return self._call("updateSystemPrompt", WRITE, [session_id, system_prompt])

    def update_token_counts(self, session_id: str, input_tokens: Optional[int] = 0,
                            output_tokens: Optional[int] = 0, model: Optional[str] = None,
                            cache_read_tokens: Optional[int] = 0, cache_write_tokens: Optional[int] = 0,
                            reasoning_tokens: Optional[int] = 0,
                            estimated_cost_usd: Optional[float] = None,
                            actual_cost_usd: Optional[float] = None, cost_status: Optional[str] = None,
                            cost_source: Optional[str] = None, pricing_version: Optional[str] = None,
                            billing_provider: Optional[str] = None,
                            billing_base_url: Optional[str] = None,
                            billing_mode: Optional[str] = None, absolute: bool = False) -> Any:
        # An explicit None token count is sent as null: it writes NULL, as the reference's SQL does.
        usage = {
            "inputTokens": input_tokens, "outputTokens": output_tokens,
            "cacheReadTokens": cache_read_tokens, "cacheWriteTokens": cache_write_tokens,
            "reasoningTokens": reasoning_tokens,
            **optional(model=model, estimatedCostUsd=estimated_cost_usd, actualCostUsd=actual_cost_usd,
                       costStatus=cost_status, costSource=cost_source, pricingVersion=pricing_version,
                       billingProvider=billing_provider, billingBaseUrl=billing_base_url,
                       billingMode=billing_mode),
        }
        return self._call("updateTokenCounts", WRITE, [session_id, usage, {"absolute": bool(absolute)}])

    def ensure_session(self, session_id: str, source: str = "unknown", model: Optional[str] = None) -> Any:
        return self._call("ensureSession", WRITE, [session_id, source, model])

    def get_session(self, session_id: str) -> Any:
        return self._call("getSession", READ, [session_id])

    def resolve_session_id(self, session_id_or_prefix: str) -> Any:
        return self._call("resolveSessionId", READ, [session_id_or_prefix])

    # -- titles -----------------------------------------------------------------------------

    sanitize_title = staticmethod(sanitize_title)

    def set_session_title(self, session_id: str, title: Optional[str]) -> Any:
        return self._call("setSessionTitle", WRITE, [session_id, title])

    def get_session_title(self, session_id: str) -> Any:
        return self._call("getSessionTitle", READ, [session_id])

    def get_session_by_title(self, title: str) -> Any:
        return self._call("getSessionByTitle", READ, [title])

    def resolve_session_by_title(self, title: str) -> Any:
        return self._call("resolveSessionByTitle", READ, [title])

    def get_next_title_in_lineage(self, base_title: str) -> Any:
        return self._call("getNextTitleInLineage", READ, [base_title])

    # -- listing ----------------------------------------------------------------------------

    def get_compression_tip(self, session_id: str) -> Any:
        return self._call("getCompressionTip", READ, [session_id])

    def list_sessions_rich(self, source: Optional[str] = None, exclude_sources: Optional[list] = None,
                           limit: int = 20, offset: int = 0, include_children: bool = False,
                           project_compression_tips: bool = True) -> Any:
        opts = optional(source=source, excludeSources=exclude_sources, limit=limit, offset=offset,
                        includeChildren=include_children, projectCompressionTips=project_compression_tips)
        return self._call("listSessionsRich", READ, [opts])

    # -- messages ---------------------------------------------------------------------------

    def append_message(self, session_id: str, role: str, content: Optional[str] = None,
                       tool_name: Optional[str] = None, tool_calls: Any = None,
                       tool_call_id: Optional[str] = None, token_count: Optional[int] = None,
                       finish_reason: Optional[str] = None, reasoning: Optional[str] = None,
                       reasoning_details: Any = None, codex_reasoning_items: Any = None) -> Any:
        msg = optional(role=role, content=content, toolName=tool_name, toolCalls=tool_calls,
                       toolCallId=tool_call_id, tokenCount=token_count, finishReason=finish_reason,
                       reasoning=reasoning, reasoningDetails=reasoning_details,
                       codexReasoningItems=codex_reasoning_items)
        return self._call("appendMessage", WRITE, [session_id, msg])

    def get_messages(self, session_id: str) -> Any:
        return self._call("getMessages", READ, [session_id])

    def get_messages_as_conversation(self, session_id: str) -> Any:
        return self._call("getMessagesAsConversation", READ, [session_id])

    # -- search -----------------------------------------------------------------------------

    _sanitize_fts5_query = staticmethod(sanitize_fts5_query)
    _contains_cjk = staticmethod(contains_cjk)

    def search_messages(self, query: str, source_filter: Optional[list] = None,
                        exclude_sources: Optional[list] = None, role_filter: Optional[list] = None,
                        limit: int = 20, offset: int = 0) -> Any:
        opts = optional(sourceFilter=source_filter, excludeSources=exclude_sources,
                        roleFilter=role_filter, limit=limit, offset=offset)
        return self._call("searchMessages", READ, [query, opts])

    def search_sessions(self, source: Optional[str] = None, limit: int = 20, offset: int = 0) -> Any:
        return self._call("searchSessions", READ, [optional(source=source, limit=limit, offset=offset)])

    def session_count(self, source: Optional[str] = None) -> Any:
        return self._call("sessionCount", READ, [optional(source=source)])

    def message_count(self, session_id: Optional[str] = None) -> Any:
        return self._call("messageCount", READ, [optional(sessionId=session_id)])

    # -- export and removal -----------------------------------------------------------------

    def export_session(self, session_id: str) -> Any:
        return self._call("exportSession", READ, [session_id])

    def clear_messages(self, session_id: str) -> Any:
        return self._call("clearMessages", WRITE, [session_id])

    def delete_session(self, session_id: str) -> Any:
        return self._call("deleteSession", WRITE, [session_id])

    def prune_sessions(self, older_than_days: float = 90, source: Optional[str] = None) -> Any:
        return self._call("pruneSessions", WRITE, [optional(olderThanDays=older_than_days, source=source)])

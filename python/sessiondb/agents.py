"""``SessionDBSession``: the OpenAI Agents SDK's ``Session`` protocol (``session_id``,
``get_items``, ``add_items``, ``pop_item``, ``clear_session``, coroutines as the SDK defines them)
over the sessiondb daemon, so every process and thread of an agent shares one conversation
through the daemon's single writer: no "database is locked", no lost write.

It implements the protocol structurally and imports nothing from the SDK, which stays optional::

    from agents import Agent, Runner
    from sessiondb.agents import SessionDBSession

    session = SessionDBSession("conversation-1")
    result = await Runner.run(agent, "Hello", session=session)

Each item is one message of the session, readable by Hermes, the reference implementation and the
CLI as an ordinary message: a message item keeps its role and its text as ``content``; a
``function_call`` is an assistant message with ``tool_calls`` (``id``, ``type: "function"``,
``function: {name, arguments}``); a ``function_call_output`` is a ``tool`` message with its
``tool_call_id``; a ``reasoning`` item is an assistant message whose ``reasoning`` is its summary.
The item itself, exactly as added, is kept in the message's ``codex_reasoning_items`` column (that
column holds Responses API items, which these are) under the key ``openai_agents_item``, and is
what ``get_items`` returns. Messages other writers put in the session come back as the items they
read as (a message, its function calls, a function call output).
"""
from __future__ import annotations

import asyncio
import json
from typing import Any, Dict, List, Optional

from .client import PathLike, SessionDB

ITEM_KEY = "openai_agents_item"
DEFAULT_SOURCE = "openai-agents"


class SessionDBSession:
    """A conversation of the OpenAI Agents SDK stored as the session ``session_id`` of a
    sessiondb database (created, with ``source``, when the first items are added).

    ``db`` shares an open ``SessionDB`` (thread-safe: many sessions may use one); otherwise the
    session opens its own with ``db_path``, ``socket_path``, ``timeout`` and ``autostart`` as
    ``SessionDB`` takes them, and ``close()`` closes it. The calls run on a worker thread, so the
    session works from any event loop (``Runner.run_sync`` makes a new one each time)."""

    # The SDK's optional per-session settings: none here (``get_items`` takes the limit).
    session_settings = None

    def __init__(self, session_id: str, db_path: Optional[PathLike] = None, *, db: Optional[SessionDB] = None,
                 source: str = DEFAULT_SOURCE, socket_path: Optional[PathLike] = None, timeout: float = 30.0,
                 autostart: bool = True) -> None:
        if not isinstance(session_id, str) or not session_id:
            raise ValueError("session_id must be a non-empty string")
        self.session_id = session_id
        self._source = source
        self._owns_db = db is None
        self._db = db if db is not None else SessionDB(db_path, socket_path=socket_path, timeout=timeout,
                                                       autostart=autostart)

    async def get_items(self, limit: Optional[int] = None) -> List[Dict[str, Any]]:
        """The conversation's items, oldest first; with ``limit``, its latest ``limit`` items."""
        messages = await asyncio.to_thread(self._db.get_messages, self.session_id)
        items = [item for message in messages for item in items_of(message)]
        if limit is None:
            return items
        return items[-limit:] if limit > 0 else []

    async def add_items(self, items: List[Dict[str, Any]]) -> None:
        """Appends the items in their order, each acknowledged only once it is committed."""
        if items:
            await asyncio.to_thread(self._add, list(items))

    async def pop_item(self) -> Optional[Dict[str, Any]]:
        """Removes the newest item and returns it (None when the conversation is empty): one write,
        so two processes popping at once never get the same item."""
        message = await asyncio.to_thread(self._db.pop_message, self.session_id)
        if message is None:
            return None
        items = items_of(message)
        return items[-1] if items else None

    async def clear_session(self) -> None:
        """Removes every item; the session itself (its title, its tokens) stays."""
        await asyncio.to_thread(self._db.clear_messages, self.session_id)

    def close(self) -> None:
        """Closes the ``SessionDB`` this session opened (a shared one is the caller's)."""
        if self._owns_db:
            self._db.close()

    def _add(self, items: List[Dict[str, Any]]) -> None:
        # Ensured on every call: cheap, idempotent, and right after someone deleted the session.
        self._db.ensure_session(self.session_id, self._source)
        for item in items:
            self._db.append_message(self.session_id, **message_of(item))


def message_of(item: Any) -> Dict[str, Any]:
    """The ``append_message`` arguments for one SDK item: the message it reads as, and the item."""
    if hasattr(item, "model_dump"):  # a pydantic model where a plain dict is expected
        item = item.model_dump(exclude_unset=True)
    if not isinstance(item, dict):
        raise TypeError(f"an Agents SDK session item is a dict, not {type(item).__name__}")
    kind = item.get("type")
    role = item.get("role")
    fields: Dict[str, Any] = {"codex_reasoning_items": {ITEM_KEY: item}}
    if kind == "function_call":
        call = {"id": item.get("call_id"), "type": "function",
                "function": {"name": item.get("name"), "arguments": item.get("arguments")}}
        fields.update(role="assistant", content=None, tool_calls=[call])
    elif kind == "function_call_output":
        output = item.get("output")
        fields.update(role="tool", content=output if isinstance(output, str) else text_of(output) or json.dumps(output),
                      tool_call_id=item.get("call_id"))
    elif isinstance(role, str) and role:
        fields.update(role=role, content=text_of(item.get("content")))
    elif kind == "reasoning":
        fields.update(role="assistant", content=None, reasoning=text_of(item.get("summary")))
    else:
        # A hosted tool's call (web search, file search, computer…): the assistant's, with no text.
        fields.update(role="assistant", content=None, tool_name=kind if isinstance(kind, str) else None)
    return fields


def text_of(content: Any) -> Optional[str]:
    """A message's text: a string as it is, the text of each part of a list joined by newlines."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [part.get("text") or part.get("refusal") for part in content if isinstance(part, dict)]
        joined = "\n".join(t for t in texts if isinstance(t, str))
        return joined or None
    return None


def items_of(message: Dict[str, Any]) -> List[Dict[str, Any]]:
    """The SDK items a stored message holds: the item added, or what a message from another
    writer reads as."""
    stored = message.get("codex_reasoning_items")
    if isinstance(stored, str):
        try:
            stored = json.loads(stored)
        except ValueError:
            stored = None
    if isinstance(stored, dict) and ITEM_KEY in stored:
        return [stored[ITEM_KEY]]
    role = message.get("role") or "assistant"
    content = message.get("content")
    if role == "tool":
        return [{"type": "function_call_output", "call_id": message.get("tool_call_id") or "", "output": content or ""}]
    items: List[Dict[str, Any]] = []
    if content:
        items.append({"role": role, "content": content})
    tool_calls = message.get("tool_calls")
    for call in tool_calls if isinstance(tool_calls, list) else []:
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            items.append({"type": "function_call", "call_id": str(call.get("id") or ""), "name": function.get("name") or "",
                          "arguments": function.get("arguments") or ""})
    return items or [{"role": role, "content": content or ""}]

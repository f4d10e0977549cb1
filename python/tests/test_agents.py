"""``sessiondb.agents.SessionDBSession``: the OpenAI Agents SDK's Session protocol against a real
daemon (over each engine): items come back exactly as added, the conversation reads as ordinary
messages (here, through the CLI and ``get_messages_as_conversation``), and threads and processes
adding and popping at once lose nothing and never get the same item twice."""
from __future__ import annotations

import asyncio
import inspect
import json
import subprocess
import sys
import threading
from pathlib import Path

from conftest import REPO
from sessiondb import SessionDB
from sessiondb.agents import SessionDBSession

# What an Agents SDK run puts in its session: the user's input, the model's message, a tool call
# and its output, a reasoning item; content as a string and as a list of parts.
ITEMS = [
    {"role": "user", "content": "What is the weather in Paris?"},
    {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Look it up."}]},
    {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "get_weather",
     "arguments": "{\"city\": \"Paris\"}", "status": "completed"},
    {"type": "function_call_output", "call_id": "call_1", "output": "sunny, 21 °C"},
    {"id": "msg_1", "type": "message", "role": "assistant", "status": "completed",
     "content": [{"type": "output_text", "text": "It is sunny in Paris.", "annotations": []}]},
]


def run(coroutine):
    return asyncio.run(coroutine)


def test_the_protocol_round_trips_items_exactly(db: SessionDB):
    session = SessionDBSession("conv-1", db=db)
    assert run(session.get_items()) == []
    run(session.add_items(ITEMS))
    assert run(session.get_items()) == ITEMS
    assert run(session.get_items(limit=2)) == ITEMS[-2:]
    assert run(session.get_items(limit=0)) == []
    assert run(session.pop_item()) == ITEMS[-1]
    assert run(session.get_items()) == ITEMS[:-1]
    assert db.get_session("conv-1")["message_count"] == len(ITEMS) - 1
    run(session.clear_session())
    assert run(session.get_items()) == []
    assert run(session.pop_item()) is None
    assert db.get_session("conv-1")["source"] == "openai-agents"


def test_the_methods_have_the_sdks_shape():
    # The SDK's Session protocol, structurally: the attribute and four coroutines.
    session = SessionDBSession.__new__(SessionDBSession)
    session.session_id = "x"
    for name, params in {"get_items": ["limit"], "add_items": ["items"], "pop_item": [], "clear_session": []}.items():
        method = getattr(SessionDBSession, name)
        assert inspect.iscoroutinefunction(method), name
        assert list(inspect.signature(method).parameters)[1:] == params, name
    assert inspect.signature(SessionDBSession.get_items).parameters["limit"].default is None


def test_the_conversation_is_ordinary_messages_for_hermes_and_the_cli(db: SessionDB, daemon):
    session = SessionDBSession("conv-2", db=db)
    run(session.add_items(ITEMS))
    assert db.get_messages_as_conversation("conv-2") == [
        {"role": "user", "content": "What is the weather in Paris?"},
        {"role": "assistant", "content": None, "reasoning": "Look it up.", "codex_reasoning_items": {"openai_agents_item": ITEMS[1]}},
        {"role": "assistant", "content": None, "codex_reasoning_items": {"openai_agents_item": ITEMS[2]},
         "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
        {"role": "tool", "content": "sunny, 21 °C", "tool_call_id": "call_1"},
        {"role": "assistant", "content": "It is sunny in Paris.", "codex_reasoning_items": {"openai_agents_item": ITEMS[4]}},
    ]
    assert db.get_session("conv-2")["tool_call_count"] == 1
    shown = subprocess.run(["node", str(REPO / "dist" / "src" / "cli" / "main.js"), "--db", str(daemon.db), "--json", "show", "conv-2"],
                           capture_output=True, text=True, check=True)
    messages = json.loads(shown.stdout)["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "assistant", "tool", "assistant"]
    assert messages[-1]["content"] == "It is sunny in Paris."
    text = subprocess.run(["node", str(REPO / "dist" / "src" / "cli" / "main.js"), "--db", str(daemon.db), "show", "conv-2"],
                          capture_output=True, text=True, check=True).stdout
    assert "get_weather(" in text and "sunny, 21 °C" in text


def test_messages_other_writers_added_read_back_as_items(db: SessionDB):
    db.create_session("hermes", "cli")
    db.append_message("hermes", "user", "hi")
    db.append_message("hermes", "assistant", "calling", tool_calls=[{"id": "c9", "type": "function", "function": {"name": "ls", "arguments": "{}"}}])
    db.append_message("hermes", "tool", "a b c", tool_call_id="c9")
    assert run(SessionDBSession("hermes", db=db).get_items()) == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "calling"},
        {"type": "function_call", "call_id": "c9", "name": "ls", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c9", "output": "a b c"},
    ]


def test_threads_each_with_a_session_on_one_shared_conversation_lose_nothing(db: SessionDB):
    threads, per_thread = 8, 25
    errors = []

    def work(t: int) -> None:
        try:
            session = SessionDBSession("shared", db=db)
            for i in range(per_thread):
                asyncio.run(session.add_items([{"role": "user", "content": f"thread {t} item {i}"}]))
        except Exception as err:  # reported below
            errors.append(err)

    workers = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert errors == []
    items = run(SessionDBSession("shared", db=db).get_items())
    assert len(items) == threads * per_thread
    for t in range(threads):
        mine = [item["content"] for item in items if item["content"].startswith(f"thread {t} ")]
        assert mine == [f"thread {t} item {i}" for i in range(per_thread)], "each thread's items in its order"


CHILD = """
import asyncio, json, sys
sys.path.insert(0, sys.argv[1])
from sessiondb.agents import SessionDBSession
db_path, mode, tag, count = sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
session = SessionDBSession("multi", db_path, autostart=False)
async def main():
    if mode == "add":
        for i in range(count):
            await session.add_items([{"role": "user", "content": f"{tag} {i}"}, {"type": "function_call_output", "call_id": f"{tag}-{i}", "output": "ok"}])
        return []
    popped = []
    while True:
        item = await session.pop_item()
        if item is None:
            return popped
        popped.append(item)
print(json.dumps(asyncio.run(main())))
session.close()
"""


def children(daemon, mode: str, count: int, processes: int):
    started = [subprocess.Popen([sys.executable, "-c", CHILD, str(REPO / "python"), str(daemon.db), mode, f"p{p}", str(count)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for p in range(processes)]
    outputs = []
    for child in started:
        out, err = child.communicate(timeout=120)
        assert child.returncode == 0, err
        outputs.append(json.loads(out))
    return outputs


def test_several_processes_add_and_pop_at_once_and_no_item_is_lost_or_popped_twice(db: SessionDB, daemon):
    processes, count = 4, 15
    children(daemon, "add", count, processes)
    items = run(SessionDBSession("multi", db=db).get_items())
    assert len(items) == processes * count * 2
    for p in range(processes):
        mine = [item["content"] for item in items if item.get("content", "").startswith(f"p{p} ")]
        assert mine == [f"p{p} {i}" for i in range(count)]
    popped = [json.dumps(item, sort_keys=True) for out in children(daemon, "pop", 0, processes) for item in out]
    assert sorted(popped) == sorted(json.dumps(item, sort_keys=True) for item in items), "every item popped exactly once"
    assert run(SessionDBSession("multi", db=db).get_items()) == []
    assert db.get_session("multi")["message_count"] == 0


def test_the_session_opens_its_own_database_and_autostarts_the_daemon(tmp: Path, bin_env: Path):
    session = SessionDBSession("auto", tmp / "state.db")
    try:
        run(session.add_items(ITEMS[:1]))
        assert run(session.get_items()) == ITEMS[:1]
    finally:
        with SessionDB(tmp / "state.db", autostart=False) as db:
            db._call("shutdown", [])
        session.close()

"""Values as the reference writes them (issue 30, item 3): the same calls made through the
reference (test/fixtures/hermes_writer.py writes as hermes_state.py does), the Python client and
the TypeScript client (direct, and through the daemon) leave rows that cannot be told apart:
REAL columns REAL, timestamps at time.time()'s full precision, JSON columns as json.dumps spells
them. And what a whole-number REAL reads back as through MessagePack: a float."""
from __future__ import annotations

import json
import math
import sqlite3
import subprocess
import sys
from pathlib import Path

from conftest import REPO
from sessiondb import SessionDB

WRITER = REPO / "test" / "fixtures" / "hermes_writer.py"

TOOL_CALLS = [{"id": "call_1", "type": "function",
               "function": {"name": "terminal", "arguments": "{\"command\": \"ls ü\"}"}}]
# Values JavaScript holds as Python does (no whole-number floats, no integer-like keys).
COMMON = [
    ["create_session", ["s1", "cli"], {"model": "m1", "system_prompt": "sp", "user_id": "u",
                                       "model_config": {"temperature": 0.7, "stop": ["\n\n"], "名前": "テスト 😀",
                                                        "tiny": 1e-05, "small": 1.5e-07, "max_tokens": 4096,
                                                        "nested": {"a": [1, 2.5, None, True, False]}}}],
    ["append_message", ["s1", "user", "héllo 日本 😀"], {}],
    ["append_message", ["s1", "assistant", None], {
        "tool_calls": TOOL_CALLS, "finish_reason": "tool_calls", "reasoning": "thinking…",
        "reasoning_details": [{"type": "reasoning.text", "text": "ok ✓\u2028\x7f", "score": 0.25}],
        "codex_reasoning_items": [{"id": "r1", "summary": [], "quote": "\"q\" \\ /"}]}],
    ["append_message", ["s1", "tool", "result"], {"tool_name": "terminal", "tool_call_id": "call_1",
                                                  "token_count": 12}],
    ["append_message", ["s1", "assistant", "empty"], {"tool_calls": [], "reasoning_details": {}}],
    ["update_token_counts", ["s1"], {"input_tokens": 10, "output_tokens": 5, "model": "m1",
                                     "estimated_cost_usd": 0.0, "cost_status": "estimated",
                                     "billing_provider": "openrouter"}],
    ["update_token_counts", ["s1"], {"input_tokens": 1, "estimated_cost_usd": 0.5, "actual_cost_usd": 0.0}],
    ["create_session", ["s2", "telegram"], {}],
    ["update_token_counts", ["s2"], {"estimated_cost_usd": 3.0}],
    ["end_session", ["s1", "user_exit"], {}],
]
# What only Python can say (JavaScript has no 1.0 apart from 1, and orders "10" before "b"):
# the Python client sends its own json.dumps text for these.
PYTHON_ONLY = [
    ["create_session", ["p1", "cli"], {"model_config": {"temperature": 1.0, "b": 1, "10": "x", "2": [2.0, -0.0]}}],
    ["append_message", ["p1", "assistant", "x"], {"tool_calls": [{"id": "c", "n": 2.0, "big": 1e16}],
                                                  "codex_reasoning_items": {"z": 1, "1": 1.0}}],
]
TIME_COLUMNS = {"started_at", "ended_at", "timestamp"}

TS_SCRIPT = f"""
import {{ readFileSync }} from "node:fs";
import {{ openSessionDB }} from "{REPO}/dist/src/index.js";
const {{ path, mode, calls }} = JSON.parse(readFileSync(0, "utf8"));
const camel = (key) => key.replace(/_([a-z])/g, (_, c) => c.toUpperCase());
const db = await openSessionDB({{ path, mode, autostart: false }});
const options = (kwargs) => Object.fromEntries(Object.entries(kwargs).map(([k, v]) => [camel(k), v]));
for (const [method, args, kwargs] of calls) {{
  if (method === "create_session") await db.createSession(args[0], args[1], options(kwargs));
  else if (method === "append_message") {{
    const msg = {{ role: args[1], ...options(kwargs) }};
    if (args[2] !== null) msg.content = args[2];
    await db.appendMessage(args[0], msg);
  }} else if (method === "update_token_counts") await db.updateTokenCounts(args[0], options(kwargs));
  else if (method === "end_session") await db.endSession(args[0], args[1]);
}}
await db.close();
console.log(JSON.stringify({{ ok: true }}));
"""


def python_client(db: SessionDB, calls) -> None:
    for method, args, kwargs in calls:
        getattr(db, method)(*args, **kwargs)


def reference(path: Path, calls) -> None:
    subprocess.run([sys.executable, str(WRITER), "calls", str(path), json.dumps(calls)], check=True,
                   capture_output=True)


def typescript(path: Path, mode: str, calls) -> None:
    subprocess.run(["node", "--input-type=module", "-e", TS_SCRIPT],
                   input=json.dumps({"path": str(path), "mode": mode, "calls": calls}),
                   text=True, check=True, capture_output=True)


def rows(path: Path):
    """Every stored value with its SQLite type, in a stable order; times by type alone (their
    values differ from run to run), and the times themselves."""
    conn = sqlite3.connect(path)
    out, times = {}, []
    for table, order in (("sessions", "id"), ("messages", "id")):
        columns = [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]
        listed = ", ".join(f"typeof({c}), quote({c}), {c}" for c in columns)
        table_rows = []
        for row in conn.execute(f"SELECT {listed} FROM {table} ORDER BY {order}"):
            cells = {}
            for i, column in enumerate(columns):
                kind, quoted, value = row[3 * i:3 * i + 3]
                if column in TIME_COLUMNS:
                    cells[column] = kind
                    if value is not None:
                        times.append(value)
                else:
                    cells[column] = (kind, quoted)
            table_rows.append(cells)
        out[table] = table_rows
    conn.close()
    return out, times


def full_precision(times) -> bool:
    """time.time() has sub-millisecond digits; Date.now() / 1000 has none. Each precise time has
    a 2 % chance of falling within 0.01 ms of a whole millisecond: all of them, never."""
    return any(abs(t * 1000 - round(t * 1000)) > 0.01 for t in times)


def test_rows_written_by_both_clients_and_the_reference_are_the_same(tmp: Path, start_daemon):
    ref, py, ts_direct, ts_daemon = (tmp / f"{name}.db" for name in ("ref", "py", "tsd", "tsm"))
    for path in (ref, py, ts_direct, ts_daemon):
        reference(path, [])  # the file as the reference creates it
    reference(ref, COMMON + PYTHON_ONLY)
    start_daemon(py)
    with SessionDB(py, autostart=False) as db:
        python_client(db, COMMON + PYTHON_ONLY)
    typescript(ts_direct, "direct", COMMON)
    start_daemon(ts_daemon)
    typescript(ts_daemon, "daemon", COMMON)

    expected, ref_times = rows(ref)
    assert full_precision(ref_times)
    mine, py_times = rows(py)
    assert mine == expected
    assert full_precision(py_times), py_times
    common = {"sessions": [r for r in expected["sessions"] if r["id"][1] != "'p1'"],
              "messages": [r for r in expected["messages"] if r["session_id"][1] != "'p1'"]}
    for path in (ts_direct, ts_daemon):
        theirs, ts_times = rows(path)
        assert theirs == common, path.name
        assert full_precision(ts_times), (path.name, ts_times)
    s1 = next(r for r in expected["sessions"] if r["id"][1] == "'s1'")
    assert s1["estimated_cost_usd"] == ("real", "0.5") and s1["actual_cost_usd"] == ("real", "0.0")
    assert s1["model_config"][1].startswith("'{\"temperature\": 0.7, \"stop\": [\"\\n\\n\"], \"\\u540d\\u524d\"")
    p1 = next(r for r in expected["sessions"] if r["id"][1] == "'p1'")
    assert p1["model_config"][1] == "'{\"temperature\": 1.0, \"b\": 1, \"10\": \"x\", \"2\": [2.0, -0.0]}'"


def test_whole_number_reals_read_back_as_floats_through_messagepack(tmp: Path, start_daemon):
    path = tmp / "state.db"
    reference(path, COMMON)
    start_daemon(path)
    with SessionDB(path, autostart=False) as db:
        db.create_session("w", "cli")
        db.update_token_counts("w", estimated_cost_usd=0.0)
        for session in (db.get_session("s2"), db.get_session("w"), db.export_session("s2")):
            assert type(session["estimated_cost_usd"]) is float
            assert type(session["started_at"]) is float
        assert db.get_session("s2")["estimated_cost_usd"] == 3.0
        assert db.get_session("w")["estimated_cost_usd"] == 0.0
        s1 = db.get_session("s1")
        assert type(s1["actual_cost_usd"]) is float and type(s1["ended_at"]) is float
        messages = db.get_messages("s1")
        assert all(type(m["timestamp"]) is float for m in messages)
        assert all(type(m["token_count"]) in (int, type(None)) for m in messages), "INTEGER stays int"
        # A decoded JSON column is the caller's data: its ints stay ints.
        assert messages[1]["tool_calls"] == TOOL_CALLS
        listed = db.list_sessions_rich()
        assert all(type(s["last_active"]) is float and type(s["started_at"]) is float for s in listed)
        assert all(type(s["message_count"]) is int for s in listed)
        hits = db.search_messages("result")
        assert hits and all(type(h["timestamp"]) is float and type(h["session_started"]) is float for h in hits)
        for exported in db.iter_export_all():
            assert type(exported["started_at"]) is float
            assert all(type(m["timestamp"]) is float for m in exported["messages"])
        assert not math.isnan(db.get_session("w")["started_at"])

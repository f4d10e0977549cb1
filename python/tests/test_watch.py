"""``SessionDB.watch()`` and ``AsyncSessionDB.watch()`` (issue 26): the change feed, from the
daemon and from the file (a handle served from it at cold start), with writes made by the
reference implementation's own sqlite3 (test/fixtures/hermes_writer.py) seen by the watcher."""
from __future__ import annotations

import asyncio
import json
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Dict, List

import pytest

from conftest import REPO, sqlite_only
from sessiondb import AsyncSessionDB, InvalidArgumentError, SessionDB
from sessiondb.watch import DaemonWatch, FileWatch
from test_cold_start import existing, gate  # noqa: F401  (fixtures)

WRITER = REPO / "test" / "fixtures" / "hermes_writer.py"
# A bound for events to arrive on a loaded machine, not a timing.
EVENT_WAIT_S = 60.0


def reference(db: Any, *calls: List[Any]) -> List[Any]:
    """Calls made by the reference implementation's sqlite3 code, in a process of its own."""
    out = subprocess.run([sys.executable, str(WRITER), "calls", str(db), json.dumps(list(calls))],
                         check=True, capture_output=True, text=True)
    return json.loads(out.stdout)["results"]


class Collector:
    """Iterates a watch on a thread of its own (as a user would), so a test waits for events
    with a deadline instead of blocking in next()."""

    def __init__(self, watch: Any) -> None:
        self.watch = watch
        self.events: "queue.Queue[Any]" = queue.Queue()
        self.ended = threading.Event()
        self.error: Any = None
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            for event in self.watch:
                self.events.put(event)
        except BaseException as err:  # noqa: BLE001 - handed to the test
            self.error = err
        finally:
            self.ended.set()

    def take(self, count: int) -> List[Dict[str, Any]]:
        got = []
        give_up = time.monotonic() + EVENT_WAIT_S
        while len(got) < count:
            try:
                got.append(self.events.get(timeout=max(0.01, give_up - time.monotonic())))
            except queue.Empty:
                raise AssertionError(f"{len(got)} of {count} events within {EVENT_WAIT_S} s: {got}; error {self.error!r}")
        return got

    def until(self, predicate: Any) -> List[Dict[str, Any]]:
        """Events up to and including the first that satisfies ``predicate``."""
        got = []
        while True:
            got += self.take(1)
            if predicate(got[-1]):
                return got

    def close(self) -> None:
        self.watch.close()
        assert self.ended.wait(EVENT_WAIT_S), "close() did not end the iteration"


def messages(events: List[Dict[str, Any]]) -> List[str]:
    return [e["message"]["content"] for e in events if e["type"] == "message"]


def changes(events: List[Dict[str, Any]]) -> List[Any]:
    return [(e["change"], e["session_id"]) for e in events if e["type"] == "session"]


# -- from the file ----------------------------------------------------------------------------

def test_a_cold_handle_watches_the_file_and_sees_the_reference_write(existing: Path):
    db = SessionDB(existing, timeout=60)
    watch = db.watch()
    assert isinstance(watch, FileWatch), "no daemon answers yet: the feed is the file's"
    feed = Collector(watch)
    reference(existing, ["create_session", ["r1", "cli"], {"model": "m"}])
    assert changes(feed.take(1)) == [("created", "r1")]
    reference(existing, ["append_message", ["r1", "user", "hello"], {}],
              ["append_message", ["r1", "assistant", "hi", None, [{"id": "c1"}]], {}])
    events = feed.take(2)
    assert messages(events) == ["hello", "hi"]
    assert events[1]["message"]["tool_calls"] == [{"id": "c1"}], "rows as get_messages gives them"
    assert events[0]["message"]["session_id"] == "r1" and isinstance(events[0]["message"]["timestamp"], float)
    reference(existing, ["update_token_counts", ["r1", 10, 5], {}])
    event = feed.take(1)[0]
    assert (event["change"], event["session"]["input_tokens"]) == ("tokens", 10)
    reference(existing, ["end_session", ["r1", "done"], {}])
    event = feed.take(1)[0]
    assert (event["change"], event["session"]["end_reason"]) == ("ended", "done")
    db.close()  # ends the watch too
    assert feed.ended.wait(EVENT_WAIT_S) and feed.error is None


def test_the_file_feed_replays_after_the_cursor_then_follows_one_session(existing: Path):
    ids = reference(existing, ["create_session", ["a", "cli"], {}], ["create_session", ["b", "tg"], {}],
                    ["append_message", ["a", "user", "a1"], {}], ["append_message", ["b", "user", "b1"], {}],
                    ["append_message", ["a", "user", "a2"], {}])[2:]
    db = SessionDB(existing, timeout=60)
    feed = Collector(db.watch(session_id="a", after_message_id=ids[0]))
    assert messages(feed.take(1)) == ["a2"], "replayed: a's messages after the cursor"
    everything = Collector(db.watch(after_message_id=0))
    assert messages(everything.take(3)) == ["a1", "b1", "a2"]
    by_source = Collector(db.watch(source="tg", after_message_id=0))
    assert messages(by_source.take(1)) == ["b1"]
    reference(existing, ["append_message", ["b", "user", "b2"], {}], ["append_message", ["a", "user", "a3"], {}],
              ["end_session", ["b", "x"], {}])
    assert messages(feed.take(1)) == ["a3"], "b's message is not a's feed"
    assert messages(everything.take(2)) == ["b2", "a3"]
    assert changes(everything.take(1)) == [("ended", "b")]
    assert [e["type"] for e in by_source.take(2)] == ["message", "session"]
    for f in (feed, everything, by_source):
        f.close()
    assert feed.events.empty(), "nothing but a's messages and a's changes"
    db.close()


def test_the_file_feed_tells_every_change_of_a_session(existing: Path):
    db = SessionDB(existing, timeout=60)
    reference(existing, ["create_session", ["s", "cli"], {}])
    feed = Collector(db.watch(session_id="s"))
    steps = [
        ("end_session", ["s", "stop"], "ended"),
        ("reopen", ["s"], "reopened"),
        ("title", ["s", "Named"], "titled"),
        ("prompt", ["s", "be brief"], "system_prompt"),
        ("clear", ["s"], "cleared"),
        ("delete", ["s"], "deleted"),
    ]
    sql = {
        "reopen": "UPDATE sessions SET ended_at = NULL, end_reason = NULL WHERE id = ?",
        "title": "UPDATE sessions SET title = ? WHERE id = ?",
        "prompt": "UPDATE sessions SET system_prompt = ? WHERE id = ?",
    }
    import sqlite3
    for name, args, change in steps:
        if name == "end_session":
            reference(existing, [name, args, {}])
        elif name == "clear":
            reference(existing, ["append_message", ["s", "user", "x"], {}])
            assert feed.take(1)[0]["type"] == "message"
            conn = sqlite3.connect(str(existing), isolation_level=None)
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("DELETE FROM messages WHERE session_id = ?", ("s",))
            conn.execute("UPDATE sessions SET message_count = 0, tool_call_count = 0 WHERE id = ?", ("s",))
            conn.execute("COMMIT")
            conn.close()
        elif name == "delete":
            conn = sqlite3.connect(str(existing), isolation_level=None)
            conn.execute("DELETE FROM sessions WHERE id = ?", ("s",))
            conn.close()
        else:
            conn = sqlite3.connect(str(existing), isolation_level=None)
            conn.execute(sql[name], tuple(reversed(args)) if len(args) == 2 else tuple(args))
            conn.close()
        event = feed.take(1)[0]
        assert (event["type"], event["change"], event["session_id"]) == ("session", change, "s")
        assert (event["session"] is None) == (change == "deleted")
    feed.close()
    db.close()


def test_watch_arguments_are_checked_before_anything_is_sent(existing: Path):
    db = SessionDB(existing, timeout=60)
    for kwargs in ({"after_message_id": -1}, {"after_message_id": "3"}, {"after_message_id": True},
                   {"after_message_id": 2 ** 53}, {"after_message_id": 1.5},
                   {"session_id": 5}, {"source": b"cli"}, {"session_id": "s", "source": "cli"}):
        with pytest.raises(InvalidArgumentError, match="after_message_id|session_id|source"):
            db.watch(**kwargs)
    db.close()


# -- the wire, against a stand-in daemon ------------------------------------------------------

def wire_daemon(tmp: Path, db: Path, watch_reply: Any) -> Any:
    from fake_daemon import FakeDaemon, hello_ok

    def answer(request: Dict[str, Any]) -> Any:
        if request["op"] == "hello":
            return hello_ok(str(db.resolve()))
        if request["op"] == "watch":
            return watch_reply(request)
        if request["op"] == "unwatch":
            return [{"id": request["args"][0], "ok": True, "result": None}, {"ok": True, "result": True}]
        return {"ok": False, "error": {"code": "PROTOCOL", "message": f"unknown op {request['op']}"}}

    return FakeDaemon(str(tmp / "fake.sock"), answer)


WIRE_EVENTS = [
    {"type": "session", "change": "created", "sessionId": "s", "session": {"id": "s", "source": "cli"}},
    {"type": "message", "message": {"id": 7, "session_id": "s", "role": "user", "content": "hi"}},
    {"type": "resync", "afterMessageId": 7},
]
PYTHON_EVENTS = [
    {"type": "session", "change": "created", "session_id": "s", "session": {"id": "s", "source": "cli"}},
    {"type": "message", "message": {"id": 7, "session_id": "s", "role": "user", "content": "hi"}},
    {"type": "resync", "after_message_id": 7},
]


def test_the_watch_request_streams_chunks_until_unwatch(existing: Path, tmp: Path):
    fake = wire_daemon(tmp, existing, lambda request: [{"chunk": WIRE_EVENTS[:2]}, {"chunk": WIRE_EVENTS[2:]}])
    db = SessionDB(existing, socket_path=tmp / "fake.sock", autostart=False)
    watch = db.watch(session_id="s", after_message_id=3)
    assert isinstance(watch, DaemonWatch)
    assert [next(watch) for _ in range(3)] == PYTHON_EVENTS
    watch.close()
    sent = [r for r in fake.requests if r["op"] in ("watch", "unwatch")]
    assert [r["op"] for r in sent] == ["watch", "unwatch"]
    assert sent[0]["args"] == [{"sessionId": "s", "afterMessageId": 3}]
    assert "timeoutMs" not in sent[0] and "deadlineEpochMs" not in sent[0], "a watch has no deadline"
    assert sent[1]["args"] == [sent[0]["id"]]
    assert list(watch) == [], "closed: the iteration is over"
    db.close()
    fake.close()


def test_a_daemon_that_stops_is_watched_again_from_the_cursor_then_its_error_ends_the_watch(existing: Path, tmp: Path):
    unavailable = {"ok": False, "error": {"code": "UNAVAILABLE", "message": "shutting down"}}
    watches: List[Dict[str, Any]] = []

    def reply(request: Dict[str, Any]) -> Any:
        watches.append(request)
        # The first daemon gives a message, then stops; the "next" one fails at once.
        return [{"chunk": WIRE_EVENTS[1:2]}, unavailable] if len(watches) == 1 else [unavailable]

    fake = wire_daemon(tmp, existing, reply)
    db = SessionDB(existing, socket_path=tmp / "fake.sock", autostart=False)
    watch = db.watch(session_id="s")
    assert next(watch) == PYTHON_EVENTS[1]
    with pytest.raises(Exception) as raised:
        next(watch)
    assert getattr(raised.value, "code", None) == "UNAVAILABLE"
    assert [w["args"] for w in watches] == [[{"sessionId": "s"}], [{"sessionId": "s", "afterMessageId": 7, "resyncFirst": True}]]
    assert list(watch) == [], "ended"
    db.close()
    fake.close()


def test_the_async_watch_streams_chunks_until_aclose(existing: Path, tmp: Path):
    fake = wire_daemon(tmp, existing, lambda request: [{"chunk": WIRE_EVENTS}])

    async def run() -> List[Any]:
        db = AsyncSessionDB(existing, socket_path=tmp / "fake.sock", autostart=False)
        got = []
        async with db.watch(source="cli") as feed:
            async for event in feed:
                got.append(event)
                if len(got) == 3:
                    break
        await db.close()
        return got

    assert asyncio.run(run()) == PYTHON_EVENTS
    sent = [r for r in fake.requests if r["op"] in ("watch", "unwatch")]
    assert [r["op"] for r in sent] == ["watch", "unwatch"] and sent[0]["args"] == [{"source": "cli"}]
    fake.close()


def test_a_daemon_without_watch_leaves_the_feed_to_the_file(existing: Path, tmp: Path):
    fake = wire_daemon(tmp, existing, lambda request: {"ok": False, "error": {"code": "PROTOCOL", "message": "unknown op watch"}})
    db = SessionDB(existing, socket_path=tmp / "fake.sock", autostart=False)
    feed = Collector(db.watch(after_message_id=0))
    reference(existing, ["create_session", ["f", "cli"], {}], ["append_message", ["f", "user", "from the file"], {}])
    assert messages(feed.until(lambda e: e["type"] == "message")) == ["from the file"], "from the file after the cursor"

    async def run() -> Any:
        adb = AsyncSessionDB(existing, socket_path=tmp / "fake.sock", autostart=False)
        feed = adb.watch(session_id="f", after_message_id=0)
        first = await asyncio.wait_for(feed.__anext__(), EVENT_WAIT_S)
        await adb.close()  # ends the watch too
        with pytest.raises(StopAsyncIteration):
            await feed.__anext__()
        return first

    assert asyncio.run(run())["message"]["content"] == "from the file"
    feed.close()
    db.close()
    fake.close()


# -- through the daemon -----------------------------------------------------------------------

def test_a_daemon_watch_sees_every_change_in_commit_order(db: SessionDB, daemon: Any, engine: str):
    writer = SessionDB(daemon.db, autostart=False)
    watch = db.watch(after_message_id=0)
    assert isinstance(watch, DaemonWatch)
    feed = Collector(watch)
    writer.create_session("s", "cli", model="m")
    assert changes(feed.until(lambda e: e["type"] == "session")) == [("created", "s")]
    first = writer.append_message("s", "user", "hello", tool_calls=[{"id": "c1"}])
    event = feed.until(lambda e: e["type"] == "message")[-1]
    assert event["message"] == [m for m in writer.get_messages("s") if m["id"] == first][0], "the row as get_messages gives it"
    for call, change in ((lambda: writer.set_session_title("s", "Named"), "titled"),
                         (lambda: writer.update_token_counts("s", input_tokens=3), "tokens"),
                         (lambda: writer.end_session("s", "done"), "ended"),
                         (lambda: writer.reopen_session("s"), "reopened"),
                         (lambda: writer.clear_messages("s"), "cleared"),
                         (lambda: writer.delete_session("s"), "deleted")):
        call()
        event = feed.until(lambda e: e["type"] == "session")[-1]
        assert (event["change"], event["session_id"]) == (change, "s")
        assert event["session"] == (None if change == "deleted" else writer.get_session("s"))
    feed.close()
    writer.close()


@sqlite_only
def test_a_daemon_watch_sees_the_reference_writer_and_replays_after_the_cursor(db: SessionDB, daemon: Any):
    ids = reference(daemon.db, ["create_session", ["r", "cli"], {}], ["append_message", ["r", "user", "one"], {}],
                    ["append_message", ["r", "user", "two"], {}])
    feed = Collector(db.watch(session_id="r", after_message_id=ids[1]))
    assert messages(feed.take(1)) == ["two"], "replayed after the cursor"
    reference(daemon.db, ["append_message", ["r", "assistant", "three, by the reference's own sqlite3"], {}])
    assert messages(feed.take(1)) == ["three, by the reference's own sqlite3"]
    feed.close()


def test_close_from_another_thread_and_db_close_end_daemon_watches(db: SessionDB, daemon: Any):
    idle = Collector(db.watch())
    idle.close()  # from this thread while the collector's thread waits in next()
    assert idle.error is None
    other = SessionDB(daemon.db, autostart=False)
    waiting = Collector(other.watch(source="cli"))
    other.close()
    assert waiting.ended.wait(EVENT_WAIT_S) and waiting.error is None
    gen = db.watch(after_message_id=0)
    db.create_session("g", "cli")
    db.append_message("g", "user", "x")

    def generator():
        yield from gen

    iterator = generator()
    assert next(iterator)["type"] in ("message", "session")
    iterator.close()  # closing the generator ends the watch it iterates
    assert list(gen) == []


def test_a_daemon_that_stops_ends_the_watch_with_unavailable(start_daemon: Any, tmp: Path, bin_env: Path):
    daemon = start_daemon(tmp / "state.db")
    db = SessionDB(daemon.db, autostart=False)
    db.create_session("s", "cli")
    feed = Collector(db.watch(after_message_id=0))
    db.append_message("s", "user", "hello")
    assert messages(feed.until(lambda e: e["type"] == "message")) == ["hello"]
    daemon.stop()
    assert feed.ended.wait(EVENT_WAIT_S)
    assert getattr(feed.error, "code", None) == "UNAVAILABLE", feed.error
    db.close()


def test_the_async_watch_through_the_daemon(daemon: Any):
    async def run() -> List[Any]:
        adb = AsyncSessionDB(daemon.db, autostart=False)
        await adb.create_session("a", "cli")
        first = await adb.append_message("a", "user", "one")
        got = []
        async with adb.watch(session_id="a", after_message_id=0) as feed:
            await adb.append_message("a", "assistant", "two")
            async for event in feed:
                got.append(event)
                if event["type"] == "message" and event["message"]["content"] == "two":
                    break
        await adb.close()
        assert got[0]["message"]["id"] == first
        return [e["message"]["content"] for e in got if e["type"] == "message"]

    assert asyncio.run(asyncio.wait_for(run(), EVENT_WAIT_S)) == ["one", "two"]


def test_a_watch_resumes_from_its_cursor_on_the_next_daemon(start_daemon: Any, tmp: Path, bin_env: Path):
    from test_autostart import stop_daemon

    daemon = start_daemon(tmp / "state.db")
    db = SessionDB(daemon.db)  # autostart on: the reconnect starts the next daemon
    db.create_session("s", "cli")
    feed = Collector(db.watch(session_id="s", after_message_id=0))
    one = db.append_message("s", "user", "one")
    assert messages(feed.until(lambda e: e["type"] == "message")) == ["one"]
    daemon.kill()
    reference(daemon.db, ["append_message", ["s", "user", "two, while no daemon ran"], {}])
    events = feed.until(lambda e: e["type"] == "message")
    assert [e["type"] for e in events] == ["resync", "message"], events
    assert events[0]["after_message_id"] == one, "from the last message id it gave"
    assert messages(events) == ["two, while no daemon ran"], "replayed after the cursor on the next daemon"
    db.append_message("s", "user", "three")
    assert messages(feed.take(1)) == ["three"]
    feed.close()
    db.close()
    stop_daemon(daemon.db)

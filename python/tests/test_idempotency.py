"""Idempotency keys from Python on a real daemon (issue 25): the same key twice is one row and the
same id, another call under a used key is IDEMPOTENCY_CONFLICT, a key sent by the TypeScript
client and then by Python is one write, and Python writers whose daemon is killed -9 again and
again resend on their own: every append present exactly once, no call failed."""
from __future__ import annotations

import json
import re
import subprocess
import threading
import time
from pathlib import Path

import pytest

from conftest import REPO, run_sql
from sessiondb import IdempotencyConflictError, InvalidArgumentError, SessionDB

INDEX = REPO / "dist" / "src" / "index.js"


def test_the_same_key_twice_is_one_row_and_the_same_id(start_daemon, tmp: Path):
    daemon = start_daemon(tmp / "state.db")
    with SessionDB(daemon.db, autostart=False) as db:
        db.create_session("s", "cli", idempotency_key="create-s")
        first = db.append_message("s", "user", "hello", idempotency_key="turn-1")
        assert db.append_message("s", "user", "hello", idempotency_key="turn-1") == first
        db.create_session("s", "cli", idempotency_key="create-s")
        assert [m["content"] for m in db.get_messages("s")] == ["hello"]
        assert db.get_session("s")["message_count"] == 1


def test_a_key_reused_with_other_arguments_is_refused_and_nothing_applied(start_daemon, tmp: Path):
    daemon = start_daemon(tmp / "state.db")
    with SessionDB(daemon.db, autostart=False) as db:
        db.create_session("s", "cli")
        db.append_message("s", "user", "hello", idempotency_key="k")
        with pytest.raises(IdempotencyConflictError) as caught:
            db.append_message("s", "user", "other", idempotency_key="k")
        assert caught.value.code == "IDEMPOTENCY_CONFLICT" and isinstance(caught.value, ValueError)
        with pytest.raises(IdempotencyConflictError):
            db.end_session("s", "done", idempotency_key="k")
        assert [m["content"] for m in db.get_messages("s")] == ["hello"]
        assert db.get_session("s")["ended_at"] is None


@pytest.mark.parametrize("bad", [{"idempotency_key": k} for k in ["", "x" * 257, 7]]
                         + [{"timestamp": t} for t in [0, -1.5, float("nan"), float("inf"), "1700000000", True]])
def test_a_bad_key_or_timestamp_is_invalid_argument_and_nothing_sent(start_daemon, tmp: Path, bad):
    daemon = start_daemon(tmp / "state.db")
    with SessionDB(daemon.db, autostart=False) as db:
        db.create_session("s", "cli")
        with pytest.raises(InvalidArgumentError):
            db.append_message("s", "user", "hello", **bad)
        assert db.message_count("s") == 0


def test_a_message_given_its_timestamp_sorts_where_it_was_written_and_the_key_holds_it(start_daemon, tmp: Path):
    daemon = start_daemon(tmp / "state.db")
    with SessionDB(daemon.db, autostart=False) as db:
        db.create_session("s", "cli")
        db.append_message("s", "user", "now")
        written = db.get_messages("s")[0]["timestamp"] - 3600.25
        first = db.append_message("s", "user", "an hour ago", timestamp=written, idempotency_key="k")
        assert db.append_message("s", "user", "an hour ago", timestamp=written, idempotency_key="k") == first
        with pytest.raises(IdempotencyConflictError):
            db.append_message("s", "user", "an hour ago", timestamp=written + 1, idempotency_key="k")
        with pytest.raises(IdempotencyConflictError):
            db.append_message("s", "user", "an hour ago", idempotency_key="k")
        messages = db.get_messages("s")
        assert [(m["content"], m["id"] == first) for m in messages] == [("an hour ago", True), ("now", False)]
        assert messages[0]["timestamp"] == written


def ts_append(db: Path, key: str, content: str) -> str:
    """appendMessage from the TypeScript client (mode daemon), with the key; its outcome as JSON."""
    script = f"""
import {{ openSessionDB }} from {json.dumps(INDEX.as_uri())};
const db = await openSessionDB({{ path: {json.dumps(str(db))}, mode: "daemon", autostart: false }});
try {{
  const id = await db.appendMessage("s", {{ role: "user", content: {json.dumps(content)} }}, {{ idempotencyKey: {json.dumps(key)} }});
  console.log(JSON.stringify({{ id }}));
}} catch (err) {{
  console.log(JSON.stringify({{ code: err.code }}));
}} finally {{
  await db.close();
}}
"""
    out = subprocess.run(["node", "--input-type=module", "-e", script], check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_automatic_keys_carry_the_time_they_were_made_first(start_daemon, tmp: Path):
    """``auto-<time>-<uuid4>``, <time> nine base-36 digits of milliseconds: the keys of later
    writes sort after the kept ones, so a commit adds its keys at the end of the table's index."""
    daemon = start_daemon(tmp / "state.db")
    before = time.time_ns() // 1_000_000
    with SessionDB(daemon.db, autostart=False) as db:
        db.create_session("s", "cli")
        rounds = []
        for round_ in range(3):
            rounds.append([db.append_message("s", "user", f"round {round_} turn {i}") for i in range(4)])
            time.sleep(0.003)  # the next round's keys are made in a later millisecond
    after = time.time_ns() // 1_000_000
    rows = run_sql(daemon.db, "SELECT key, op, result FROM sessiondb_idempotency ORDER BY rowid")
    assert len(rows) == 13
    for key, _, _ in rows:
        match = re.fullmatch(r"auto-([0-9a-z]{9})-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", key)
        assert match, key
        assert before <= int(match.group(1), 36) <= after, (key, before, after)
    key_of = {json.loads(result)[0]: key for key, op, result in rows if op == "appendMessage"}
    made_at = {i: int(key.split("-")[1], 36) for i, key in key_of.items()}
    for round_ in range(1, len(rounds)):
        earlier = [i for ids in rounds[:round_] for i in ids]
        latest_before = max(key_of[i] for i in earlier)
        # Each write's own time: made after the pause, later than every earlier key's.
        assert all(made_at[i] > max(made_at[j] for j in earlier) for i in rounds[round_]), (rounds, key_of)
        assert all(key_of[i] > latest_before for i in rounds[round_]), (rounds, key_of)


def test_keys_from_typescript_and_python_on_one_daemon(start_daemon, tmp: Path):
    daemon = start_daemon(tmp / "state.db")
    with SessionDB(daemon.db, autostart=False) as db:
        db.create_session("s", "cli")
        from_ts = ts_append(daemon.db, "shared-1", "from either")
        assert db.append_message("s", "user", "from either", idempotency_key="shared-1") == from_ts["id"]
        from_py = db.append_message("s", "user", "python first", idempotency_key="shared-2")
        assert ts_append(daemon.db, "shared-2", "python first") == {"id": from_py}
        # The same key with other arguments, across the two languages: refused both ways.
        assert ts_append(daemon.db, "shared-2", "something else") == {"code": "IDEMPOTENCY_CONFLICT"}
        with pytest.raises(IdempotencyConflictError):
            db.append_message("s", "assistant", "from either", idempotency_key="shared-1")
        assert [m["content"] for m in db.get_messages("s")] == ["from either", "python first"]


WRITERS = 4
TS_WRITERS = 2
TS_PIPELINE = 4
APPENDS = 60
KILLS = 4

# A TypeScript writer (mode daemon, the client's own keys and resends): APPENDS appends to its
# session, TS_PIPELINE in flight at once; prints "ready" once connected, then
# {"ids": {content: id}, "failed": [[content, code]]}.
TS_WRITER = """
import { openSessionDB } from %(index)s;
const [path, session, count, pipeline] = process.argv.slice(1);
const db = await openSessionDB({ path, mode: "daemon", autostart: false, requestTimeoutMs: 120000 });
console.log("ready");
const ids = {}, failed = [];
let next = 0;
await Promise.all(Array.from({ length: Number(pipeline) }, async () => {
  while (next < Number(count)) {
    const content = `${session} m${next++}`;
    await db.appendMessage(session, { role: "user", content }).then((id) => { ids[content] = id; }, (err) => { failed.push([content, err.code ?? String(err)]); });
  }
}));
await db.close();
console.log(JSON.stringify({ ids, failed }));
"""


def finished(writer: subprocess.Popen) -> tuple:
    """A TypeScript writer's stdout after "ready", and its stderr, once it exited. Read through the
    file objects: the readline() of "ready" may have buffered its last line too (a writer done
    before it was read), which communicate(), reading the pipe past that buffer, would miss."""
    out, err = writer.stdout.read(), writer.stderr.read()
    writer.wait(timeout=600)
    return out, err


def test_kill_9_of_the_daemon_in_a_loop_under_python_and_typescript_writers_loses_and_doubles_nothing(start_daemon, tmp: Path):
    path = tmp / "state.db"
    daemon = start_daemon(path)
    with SessionDB(path, autostart=False) as setup:
        for w in range(WRITERS):
            setup.create_session(f"w{w}", "cli")
        for w in range(TS_WRITERS):
            setup.create_session(f"ts{w}", "cli")
    total = (WRITERS + TS_WRITERS) * APPENDS
    errors = []
    py_ids = {}

    # Opened (connected) before the first kill, as the TypeScript writers are before they say
    # "ready": the open is no write, and the kills are for writes in flight. A generous deadline:
    # the daemon is restarted within it however loaded the machine is.
    handles = [SessionDB(path, autostart=False, timeout=120) for _ in range(WRITERS)]

    def write(w: int) -> None:
        with handles[w] as db:
            for i in range(APPENDS):
                try:
                    py_ids[f"w{w} m{i}"] = db.append_message(f"w{w}", "user", f"w{w} m{i}")
                except Exception as err:  # the test's point: no call fails
                    errors.append((w, i, err))
                    return

    script = TS_WRITER % {"index": json.dumps(INDEX.as_uri())}
    ts_writers = [subprocess.Popen(["node", "--input-type=module", "-e", script, str(path), f"ts{w}", str(APPENDS),
                                    str(TS_PIPELINE)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                  for w in range(TS_WRITERS)]
    for writer in ts_writers:
        assert writer.stdout.readline().strip() == "ready", writer.stderr.read()
    threads = [threading.Thread(target=write, args=(w,)) for w in range(WRITERS)]
    for thread in threads:
        thread.start()
    try:
        for k in range(KILLS):
            # Wait for a state (more appends in the file since the last kill), never for a time.
            target = (k + 1) * total // (KILLS + 2)
            while run_sql(path, "SELECT COUNT(*) FROM messages")[0][0] < target:
                assert not errors, errors
                assert any(t.is_alive() for t in threads) or any(p.poll() is None for p in ts_writers), "the writers stopped"
                time.sleep(0.02)
            daemon.kill()
            daemon = start_daemon(path)
    finally:
        for thread in threads:
            thread.join()
        reports = [finished(p) for p in ts_writers]
    assert errors == []
    for w in range(WRITERS):
        rows = run_sql(path, "SELECT content, id FROM messages WHERE session_id = ? ORDER BY id", (f"w{w}",))
        assert [r[0] for r in rows] == [f"w{w} m{i}" for i in range(APPENDS)]
        assert all(py_ids[content] == id for content, id in rows), "each with the id its call was answered"
    for w, (out, err) in enumerate(reports):
        assert ts_writers[w].returncode == 0, err
        report = json.loads(out.strip().splitlines()[-1])
        assert report["failed"] == [], f"ts{w}: no call failed"
        rows = run_sql(path, "SELECT content, id FROM messages WHERE session_id = ?", (f"ts{w}",))
        assert sorted(r[0] for r in rows) == sorted(f"ts{w} m{i}" for i in range(APPENDS)), f"ts{w}: each append once"
        assert {content: id for content, id in rows} == report["ids"], f"ts{w}: each with the id its call was answered"
    assert run_sql(path, "SELECT COUNT(*) FROM messages")[0][0] == total

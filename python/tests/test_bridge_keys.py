"""The cold-start bridge's writes carry idempotency keys (issue 25): each write served from the file
while the daemon starts records its key, with the digest the TypeScript engine takes over the
same arguments, in the write's transaction. So the same call with the same key sent again after
the move to the daemon, or by the TypeScript library in direct mode on the same file, answers the
first result (the same message id) and applies nothing, and other arguments under the key are
IDEMPOTENCY_CONFLICT. Also: the digest's spelling of numbers and text is JavaScript's."""
from __future__ import annotations

import json
import math
import random
import struct
import subprocess
import time
from pathlib import Path
from typing import Any, List, Tuple

import pytest

from conftest import REPO
from sessiondb import IdempotencyConflictError, SessionDB
from sessiondb.bridge import Bridge
from sessiondb.write_digest import js_json, js_number, write_digest
from test_cold_start import MOVE_WAIT_S, existing, gate, moved  # noqa: F401 (fixtures)

INDEX = REPO / "dist" / "src" / "index.js"
CATALOGUE = REPO / "dist" / "src" / "operation-catalogue.js"
DIGEST = REPO / "dist" / "src" / "operations" / "idempotency-keys.js"


def node(script: str, stdin: Any) -> Any:
    """Runs an ES module script under Node with ``stdin`` as JSON; its stdout's JSON."""
    done = subprocess.run(["node", "--input-type=module", "-e", script], input=json.dumps(stdin),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def recording(monkeypatch: pytest.MonkeyPatch) -> List[Tuple[str, list, str]]:
    """The writes the bridge serves, as (op, wire args, key)."""
    served: List[Tuple[str, list, str]] = []
    original = Bridge.run

    def run(self: Bridge, op: str, args: list, key: Any = None) -> Any:
        result = original(self, op, args, key)
        if key is not None:
            served.append((op, json.loads(json.dumps(args)), key))
        return result

    monkeypatch.setattr(Bridge, "run", run)
    return served


def bridge_writes(db: SessionDB) -> None:
    """One keyed call of each write the bridge serves, with the kinds of values the digest spells."""
    db.create_session("s", "cli", model="m", model_config={"t": 1.0, "x": [1e-05, "é\n"]}, system_prompt="sys",
                      user_id="u", idempotency_key="k-create")
    db.ensure_session("e", idempotency_key="k-ensure")
    db.update_system_prompt("s", "prompt \u2028 漢字 😀", idempotency_key="k-prompt")
    db.update_token_counts("s", input_tokens=10, output_tokens=None, model="gpt", estimated_cost_usd=0.1,
                           actual_cost_usd=2.0, cost_status="ok", billing_provider="p", idempotency_key="k-tokens")
    db.append_message("s", "user", 'quote " back \\ tab \t nul-free \x01', idempotency_key="k-m1")
    db.append_message("s", "assistant", "calls", tool_calls=[{"id": "c1", "n": 1.5}, {"id": "c2"}], tool_call_id="t",
                      token_count=7, finish_reason="stop", reasoning="why", reasoning_details=[{"a": 1}],
                      codex_reasoning_items={"b": [True, None]}, idempotency_key="k-m2")
    db.append_message("s", "user", "stamped", timestamp=1764970000.125, idempotency_key="k-m3")
    db.end_session("s", "done", idempotency_key="k-end")
    db.reopen_session("s", idempotency_key="k-reopen")


def ts_direct_resend(path: Path, served: List[Tuple[str, list, str]]) -> List[Any]:
    """Each served write sent again by the TypeScript library in direct mode, with its key; each
    outcome as ``{"result": ...}`` or ``{"code": ...}``."""
    script = f"""
import {{ openSessionDB }} from {json.dumps(INDEX.as_uri())};
import {{ OPERATIONS }} from {json.dumps(CATALOGUE.as_uri())};
import {{ readFileSync }} from "node:fs";
const calls = JSON.parse(readFileSync(0, "utf8"));
const db = await openSessionDB({{ path: calls.path, mode: "direct" }});
const out = [];
for (const [op, args, key] of calls.served) {{
  const padded = [...args];
  while (padded.length < OPERATIONS[op].maxArgs) padded.push(undefined);
  out.push(await db[op](...padded, {{ idempotencyKey: key }}).then((result) => ({{ result: result ?? null }}), (err) => ({{ code: err.code }})));
}}
await db.close();
process.stdout.write(JSON.stringify(out));
"""
    return node(script, {"path": str(path), "served": served})


def test_a_key_written_by_the_bridge_answers_typescript_direct_mode_with_the_first_result(
        existing: Path, gate: Path, monkeypatch: pytest.MonkeyPatch):
    served = recording(monkeypatch)
    db = SessionDB(existing, timeout=60)
    try:
        bridge_writes(db)
        assert not moved(db), "the daemon waits at the gate: these writes were the bridge's"
        ids = [m["id"] for m in db.get_messages("s")]
        before = db.get_session("s")
        assert len(served) == 9
        outcomes = ts_direct_resend(existing, served)
        first_ids = [o.get("result") for (op, _, _), o in zip(served, outcomes) if op == "appendMessage"]
        assert [o for o in outcomes if "code" in o] == [], f"every resend answered: {outcomes}"
        assert first_ids == sorted(ids), "the same message ids: the bridge's first results"
        assert ids[0] == first_ids[2], "the stamped message sorts where it was written"
        assert outcomes[0] == {"result": "s"}
        after = db.get_session("s")
        assert after == before, "nothing applied again (counters, costs, the end and reopen)"
        assert [m["id"] for m in db.get_messages("s")] == ids
        # Other arguments under a bridge's key: TypeScript answers IDEMPOTENCY_CONFLICT.
        op, args, key = served[4]
        other = [args[0], {**args[1], "content": "something else"}]
        assert ts_direct_resend(existing, [(op, other, key)]) == [{"code": "IDEMPOTENCY_CONFLICT"}]
    finally:
        gate.touch()
        db.close()


def test_a_bridge_write_sent_again_after_the_move_to_the_daemon_is_not_doubled(existing: Path, gate: Path):
    db = SessionDB(existing, timeout=60)
    try:
        db.create_session("s", "cli", idempotency_key="k-create")
        first = db.append_message("s", "user", "once", timestamp=1764970000.5, idempotency_key="k-turn")
        assert not moved(db)
        gate.touch()
        give_up = time.monotonic() + MOVE_WAIT_S
        while not moved(db):
            assert time.monotonic() < give_up, "the daemon never answered"
            db.get_session("s")
        assert db._connection is not None, "served by the daemon now"
        assert db.append_message("s", "user", "once", timestamp=1764970000.5, idempotency_key="k-turn") == first
        db.create_session("s", "cli", idempotency_key="k-create")
        with pytest.raises(IdempotencyConflictError):
            db.append_message("s", "user", "once", idempotency_key="k-turn")
        assert [m["id"] for m in db.get_messages("s")] == [first]
        assert db.get_session("s")["message_count"] == 1
    finally:
        db.close()


def test_a_key_the_bridge_already_holds_with_other_arguments_goes_to_the_daemon(existing: Path, gate: Path):
    db = SessionDB(existing, timeout=60)
    try:
        db.create_session("s", "cli")
        first = db.append_message("s", "user", "one", idempotency_key="k")
        assert db.append_message("s", "user", "one", idempotency_key="k") == first, "the bridge answers its first result"
        assert not moved(db)
        gate.touch()
        with pytest.raises(IdempotencyConflictError):  # the daemon's answer, after the move
            db.append_message("s", "user", "two", idempotency_key="k")
        assert moved(db)
        assert [m["content"] for m in db.get_messages("s")] == ["one"]
    finally:
        db.close()


def test_numbers_and_text_are_spelled_as_javascript_spells_them():
    rng = random.Random(25)
    numbers = [1.0, 0.1, 1e-05, 1e-06, 1e-07, 1.5e16, 1e20, 1e21, 5e-324, 1.7976931348623157e308, -0.0, -2.5,
               1764970000.25, 2.0 ** 53, 1 / 3, 123e-20]
    while len(numbers) < 2000:
        numbers.append(struct.unpack("d", struct.pack("Q", rng.getrandbits(64)))[0])
        numbers.append(rng.random() * 10 ** rng.randint(-30, 30))
    numbers = [n for n in numbers if math.isfinite(n)]
    texts = ['"\\\x00\x1f\x7f\b\f\n\r\t é 漢 😀 \u2028\u2029', ""]
    params = {"id": "s", "n": [1, -7, 2 ** 53 - 1, None, True, False], "f": numbers[:50], "t": texts}
    script = f"""
import {{ writeDigest }} from {json.dumps(DIGEST.as_uri())};
import {{ readFileSync }} from "node:fs";
const v = JSON.parse(readFileSync(0, "utf8"));
process.stdout.write(JSON.stringify({{ n: v.n.map(String), t: v.t.map((x) => JSON.stringify(x)), d: writeDigest("appendMessage", v.p) }}));
"""
    spelled = node(script, {"n": numbers, "t": texts, "p": params})
    assert [js_number(n) for n in numbers] == spelled["n"]
    assert [js_json(t) for t in texts] == spelled["t"]
    assert write_digest("appendMessage", params) == spelled["d"]
    with pytest.raises(ValueError):
        js_json(2 ** 53)

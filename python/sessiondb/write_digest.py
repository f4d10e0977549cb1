"""Idempotency keys written from Python straight to the file (the cold-start bridge, bridge.py), as
the TypeScript engine writes them (src/operations/idempotency-keys.ts, src/sqlite/keyed-write.ts):
the key, its op, the digest of its arguments and its first result, in the write's own
transaction, in the table ``sessiondb_idempotency``. The digest is the hex SHA-256 of
``JSON.stringify([op, params])``, ``params`` being the arguments as the engine's parser gives
them, so it is spelled here byte for byte as JavaScript spells it: the same key sent again by the
daemon, the TypeScript library or this client, with the same arguments, answers the first result
rather than IDEMPOTENCY_CONFLICT (docs/protocol.md §7.1)."""
from __future__ import annotations

import hashlib
import json
import math
import sqlite3
import time
from typing import Any, Callable

KEYS_TABLE = "sessiondb_idempotency"
TABLE_SQL = (f"CREATE TABLE IF NOT EXISTS {KEYS_TABLE} (key TEXT PRIMARY KEY, op TEXT NOT NULL, "
             "digest TEXT NOT NULL, result TEXT NOT NULL, created_at REAL NOT NULL)")
MAX_SAFE_INTEGER = 2 ** 53 - 1


class DigestMismatch(Exception):
    """The key was applied by another op or with other arguments: the daemon's to answer."""


def js_number(value: float) -> str:
    """A number as JavaScript's ``String(n)`` (ECMAScript Number::toString) spells it. Python's
    ``repr`` gives the same shortest round-trip digits; only the layout differs (``1e-05`` is
    ``0.00001``, ``1.0`` is ``1``, ``1e+16`` is ``10000000000000000``)."""
    if not math.isfinite(value):
        raise ValueError(f"{value!r} is not JSON data")  # JSON.stringify would write null; never sent
    if value == 0:
        return "0"  # -0 too
    sign = "-" if value < 0 else ""
    mantissa, _, exponent = repr(abs(value)).partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = (whole + fraction).lstrip("0")
    # value = 0.<digits> × 10^n
    n = len(whole) + (int(exponent) if exponent else 0) - (len(whole + fraction) - len((whole + fraction).lstrip("0")))
    digits = digits.rstrip("0")
    k = len(digits)
    if k <= n <= 21:
        return sign + digits + "0" * (n - k)
    if 0 < n <= 21:
        return sign + digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * -n + digits
    e = n - 1
    tail = f"e{'+' if e >= 0 else '-'}{abs(e)}"
    return sign + (digits if k == 1 else digits[0] + "." + digits[1:]) + tail


def js_json(value: Any) -> str:
    """``JSON.stringify(value)`` for the values an engine's params hold: None, bools, numbers
    (integers within ±(2^53 - 1), as JavaScript holds them exactly), str, lists, str-keyed dicts
    in their order. A str is escaped as JSON.stringify escapes it, as ``json.dumps`` with
    ``ensure_ascii=False`` does (``\\"``, ``\\\\``, ``\\b\\f\\n\\r\\t``, other controls ``\\u00xx``)."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if type(value) is int:
        if abs(value) > MAX_SAFE_INTEGER:
            raise ValueError(f"{value} is past what a JavaScript number holds exactly")
        return str(value)
    if type(value) is float:
        return js_number(value)
    if type(value) is str:
        return json.dumps(value, ensure_ascii=False)
    if type(value) is list:
        return "[" + ",".join(js_json(item) for item in value) + "]"
    if type(value) is dict:
        return "{" + ",".join(f"{js_json(k)}:{js_json(v)}" for k, v in value.items()) + "}"
    raise ValueError(f"{type(value).__name__} has no digest spelling")


def write_digest(op: str, params: Any) -> str:
    """The engine's writeDigest(op, params): the hex SHA-256 of ``JSON.stringify([op, params])``."""
    return hashlib.sha256(js_json([op, params]).encode("utf-8")).hexdigest()


def keyed_write(conn: sqlite3.Connection, key: str, op: str, digest: str, run: Callable[[], Any]) -> Any:
    """Inside the caller's write transaction: runs the write once per key (runKeyedWrite's rule).
    A key already recorded with this op and digest answers its first result, nothing run; with
    another, raises DigestMismatch (nothing run: the daemon answers IDEMPOTENCY_CONFLICT)."""
    try:
        kept = conn.execute(f"SELECT op, digest, result FROM {KEYS_TABLE} WHERE key = ?", (key,)).fetchone()
    except sqlite3.OperationalError as err:
        if f"no such table: {KEYS_TABLE}" not in str(err):
            raise
        conn.execute(TABLE_SQL)  # in the write's transaction: rolled back with it
        kept = None
    if kept is not None:
        if (kept[0], kept[1]) != (op, digest):
            raise DigestMismatch()
        first = json.loads(kept[2])
        return first[0] if first else None
    result = run()
    conn.execute(f"INSERT INTO {KEYS_TABLE} (key, op, digest, result, created_at) VALUES (?, ?, ?, ?, ?)",
                 (key, op, digest, json.dumps([] if result is None else [result], ensure_ascii=False), time.time()))
    return result

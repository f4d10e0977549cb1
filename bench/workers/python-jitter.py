"""Convoy mode `python-jitter`: the reference agent's writer, using only Python's sqlite3.

It connects and writes exactly as the reference implementation does (timeout=1.0, autocommit,
BEGIN IMMEDIATE, on "locked"/"busy" a rollback and a uniformly random 20-150 ms sleep, 15
attempts in all) and counts its retries. The convoy protocol is python_convoy.py's.
"""
import json
import os
import random
import sqlite3
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from python_convoy import measure, report  # noqa: E402

WRITE_MAX_RETRIES = 15
WRITE_RETRY_MIN_S = 0.020
WRITE_RETRY_MAX_S = 0.150


def connect(path, synchronous):
    conn = sqlite3.connect(path, check_same_thread=False, timeout=1.0, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA foreign_keys=ON")
    conn.execute("PRAGMA synchronous=%s" % synchronous)
    return conn


class Writer:
    def __init__(self, conn):
        self.conn = conn
        self.retries = 0

    def execute_write(self, fn):
        """The reference's BEGIN IMMEDIATE with jittered retry; counts every retry."""
        last_err = None
        for attempt in range(WRITE_MAX_RETRIES):
            try:
                self.conn.execute("BEGIN IMMEDIATE")
                try:
                    result = fn(self.conn)
                    self.conn.execute("COMMIT")
                except BaseException:
                    if self.conn.in_transaction:
                        self.conn.execute("ROLLBACK")
                    raise
                return result
            except sqlite3.OperationalError as exc:
                message = str(exc).lower()
                if "locked" in message or "busy" in message:
                    last_err = exc
                    if attempt < WRITE_MAX_RETRIES - 1:
                        self.retries += 1
                        time.sleep(random.uniform(WRITE_RETRY_MIN_S, WRITE_RETRY_MAX_S))
                        continue
                raise
        raise last_err or sqlite3.OperationalError("database is locked after max retries")


def append_message(writer, session_id, msg):
    tool_calls = msg.get("toolCalls")
    tool_calls_json = json.dumps(tool_calls) if tool_calls else None
    num_tool_calls = len(tool_calls) if tool_calls else 0

    def do(c):
        cursor = c.execute(
            """INSERT INTO messages (session_id, role, content, tool_call_id,
               tool_calls, tool_name, timestamp, token_count, finish_reason,
               reasoning, reasoning_details, codex_reasoning_items)
               VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
            (session_id, msg["role"], msg.get("content"), msg.get("toolCallId"), tool_calls_json,
             msg.get("toolName"), time.time(), None, None, None, None, None),
        )
        c.execute(
            "UPDATE sessions SET message_count = message_count + 1, tool_call_count = tool_call_count + ? WHERE id = ?",
            (num_tool_calls, session_id),
        )
        return cursor.lastrowid
    return writer.execute_write(do)


def main(config):
    writer = Writer(connect(config["db"], config["synchronous"]))
    writer.execute_write(lambda c: c.execute(
        "INSERT OR IGNORE INTO sessions (id, source, started_at) VALUES (?, ?, ?)",
        (config["sessionId"], "bench-python", time.time()),
    ))
    figures = measure(config, lambda msg: append_message(writer, config["sessionId"], msg), sqlite3.Error,
                      lambda: writer.retries)
    writer.conn.close()
    report(figures)


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))

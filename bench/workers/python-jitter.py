"""Convoy mode `python-jitter`: the reference agent's writer, using only Python's sqlite3.

It connects and writes exactly as the reference implementation does (timeout=1.0, autocommit,
BEGIN IMMEDIATE, on "locked"/"busy" a rollback and a uniformly random 20-150 ms sleep, 15
attempts in all) and counts its retries. Same protocol as the Node children (protocol.ts):
config JSON in argv[1], "ready", then "go"/"stop" on stdin, the report as the last stdout line.
"""
import json
import os
import random
import sqlite3
import sys
import threading
import time

WRITE_MAX_RETRIES = 15
WRITE_RETRY_MIN_S = 0.020
WRITE_RETRY_MAX_S = 0.150


class Control:
    """Reads "go" and "stop" from stdin on a thread, so the write loop never blocks on it."""

    def __init__(self):
        self.go = threading.Event()
        self.stop = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in sys.stdin:
            word = line.strip()
            if word == "go":
                self.go.set()
            elif word == "stop":
                self.stop.set()
                self.go.set()
        self.stop.set()
        self.go.set()


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


def sched_times():
    """(ms run, ms waiting for a core) of this process's threads, from Linux's schedstat; None elsewhere."""
    try:
        run = wait = 0
        for tid in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{tid}/schedstat") as f:
                fields = f.read().split()
            run += int(fields[0])
            wait += int(fields[1])
        return run / 1e6, wait / 1e6
    except (OSError, ValueError, IndexError):
        return None


def main(config):
    control = Control()
    with open(config["messagesFile"], encoding="utf-8") as f:
        messages = json.load(f)
    writer = Writer(connect(config["db"], config["synchronous"]))
    writer.execute_write(lambda c: c.execute(
        "INSERT OR IGNORE INTO sessions (id, source, started_at) VALUES (?, ?, ?)",
        (config["sessionId"], "bench-python", time.time()),
    ))
    warmup_appends = 0
    for n in range(config["warmup"]):
        try:
            append_message(writer, config["sessionId"], messages[(config["offset"] + n) % len(messages)])
            warmup_appends += 1
        except sqlite3.Error:
            pass
    writer.retries = 0
    print("ready", flush=True)
    control.go.wait()
    cpu_before = time.process_time()
    sched_before = sched_times()
    start_ms = time.time() * 1000
    deadline = time.perf_counter() + config["seconds"]
    latencies = []
    failures = 0
    errors = {}
    n = config["warmup"]
    while not control.stop.is_set() and time.perf_counter() < deadline:
        msg = messages[(config["offset"] + n) % len(messages)]
        n += 1
        t0 = time.perf_counter()
        try:
            append_message(writer, config["sessionId"], msg)
            latencies.append(round((time.perf_counter() - t0) * 1000, 3))
        except sqlite3.Error as exc:
            failures += 1
            key = str(exc)[:80]
            errors[key] = errors.get(key, 0) + 1
    end_ms = time.time() * 1000
    cpu_ms = (time.process_time() - cpu_before) * 1000
    sched_after = sched_times()
    sched = None
    if sched_before is not None and sched_after is not None:
        sched = {"runMs": sched_after[0] - sched_before[0], "waitMs": sched_after[1] - sched_before[1]}
    writer.conn.close()
    print(json.dumps({
        "warmupAppends": warmup_appends, "appends": len(latencies), "failures": failures, "errors": errors,
        "retries": writer.retries, "startMs": start_ms, "endMs": end_ms, "latenciesMs": latencies, "cpuMs": cpu_ms,
        "sched": sched,
    }), flush=True)


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))

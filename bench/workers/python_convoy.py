"""The convoy protocol of the Python writers (the same as the Node children's, protocol.ts):
config JSON in argv[1], "ready", then "go"/"stop" on stdin, the report as the last stdout line.
Each writer supplies how to append one message; the timing and the report are here, once."""
import json
import os
import sys
import threading
import time


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


def measure(config, append, failure_types, retries=lambda: None):
    """One writer's whole run: warm up, say "ready", wait for "go", append for config["seconds"]
    (or until "stop"), and return the report. `append(msg)` appends one message;
    `failure_types` are the errors that count as a failed append; `retries()` reads the
    writer's retry counter (None where it has none)."""
    control = Control()
    with open(config["messagesFile"], encoding="utf-8") as f:
        messages = json.load(f)
    warmup_appends = 0
    for n in range(config["warmup"]):
        try:
            append(messages[(config["offset"] + n) % len(messages)])
            warmup_appends += 1
        except failure_types:
            pass
    print("ready", flush=True)
    control.go.wait()
    reset = retries()
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
            append(msg)
            latencies.append(round((time.perf_counter() - t0) * 1000, 3))
        except failure_types as exc:
            failures += 1
            key = str(exc)[:80]
            errors[key] = errors.get(key, 0) + 1
    end_ms = time.time() * 1000
    cpu_ms = (time.process_time() - cpu_before) * 1000
    sched_after = sched_times()
    sched = None
    if sched_before is not None and sched_after is not None:
        sched = {"runMs": sched_after[0] - sched_before[0], "waitMs": sched_after[1] - sched_before[1]}
    counted = retries()
    return {
        "warmupAppends": warmup_appends, "appends": len(latencies), "failures": failures, "errors": errors,
        "retries": None if counted is None else counted - (reset or 0), "startMs": start_ms, "endMs": end_ms,
        "latenciesMs": latencies, "cpuMs": cpu_ms, "sched": sched,
    }


def report(figures):
    print(json.dumps(figures), flush=True)

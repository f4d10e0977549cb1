"""Convoy mode `python-daemon`: the Hermes agent's writer after the one-line switch, appending
through the daemon with the Python client (`from sessiondb import SessionDB`). The convoy
protocol is python_convoy.py's.
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
from python_convoy import measure, report  # noqa: E402
from sessiondb import SessionDB, SessionDBError  # noqa: E402


def main(config):
    db = SessionDB(config["db"], socket_path=config["socket"], autostart=False)
    session_id = config["sessionId"]
    db.ensure_session(session_id, "bench-python")

    def append(msg):
        db.append_message(session_id, msg["role"], msg.get("content"), tool_name=msg.get("toolName"),
                          tool_calls=msg.get("toolCalls"), tool_call_id=msg.get("toolCallId"))

    figures = measure(config, append, SessionDBError)
    db.close()
    report(figures)


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))

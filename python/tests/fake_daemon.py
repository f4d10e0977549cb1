"""A tiny stand-in daemon on a Unix socket for the cases a real one cannot show on demand: one
that speaks a newer protocol, one that never answers. It records every request it reads."""
from __future__ import annotations

import socket
import threading
from typing import Any, Callable, Dict, List, Optional

import msgpack

from sessiondb.protocol import HEADER

Reply = Any  # a frame's map, a list of them, or None (no answer)


class FakeDaemon:
    def __init__(self, path: str, answer: Callable[[Dict[str, Any]], Reply]) -> None:
        self.path = path
        self.answer = answer
        self.requests: List[Dict[str, Any]] = []
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._server.bind(path)
        self._server.listen(16)
        self._connections: List[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._server.accept()
            except OSError:
                return
            self._connections.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        buffer = b""
        try:
            while True:
                data = conn.recv(65536)
                if not data:
                    return
                buffer += data
                while len(buffer) >= 4:
                    (length,) = HEADER.unpack_from(buffer)
                    if len(buffer) < 4 + length:
                        break
                    request = msgpack.unpackb(buffer[4:4 + length], raw=False)
                    buffer = buffer[4 + length:]
                    self.requests.append(request)
                    reply = self.answer(request)
                    # A list: several frames (a stream's chunks, another request's reply), each
                    # with the request's id unless it names its own.
                    for frame in reply if isinstance(reply, list) else [reply] if reply is not None else []:
                        body = msgpack.packb({"id": request["id"], **frame}, use_bin_type=True)
                        conn.sendall(HEADER.pack(len(body)) + body)
        except OSError:
            return

    def connections_seen(self) -> List[socket.socket]:
        return list(self._connections)

    def goodbye(self) -> None:
        """What the daemon does to an idle connection: the goodbye frame, then the close. The
        connections stay listed (closed) so that new ones are told apart."""
        body = msgpack.packb({"id": 0, "ok": False, "error": {"code": "CLOSED", "message": "idle"}}, use_bin_type=True)
        for conn in list(self._connections):
            try:
                conn.sendall(HEADER.pack(len(body)) + body)
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def close(self) -> None:
        self._server.close()
        for conn in self.connections_seen():
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            conn.close()


def hello_ok(database: str) -> Dict[str, Any]:
    return {"ok": True, "result": {"server": "sessiondb", "version": "0.0.0", "protocol": 1,
                                    "schemaVersion": 6, "pid": 1, "database": database}}

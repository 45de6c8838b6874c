"""A small HTTP/1.1 proxy for the tests: it forwards each request to the
server on a connection of its own and can, by rule, drop the answer (the
client's connection closed without a byte, after the server carried the
request out) or answer in the server's place (a 503 with Retry-After)."""

from __future__ import annotations

import socket
import threading
import time
from typing import Callable, List, Optional, Tuple

#: A rule sees (method, path) and returns "forward", "drop", or the raw
#: answer to send instead of forwarding.
Rule = Callable[[str, str], object]


class Proxy:
    def __init__(self, upstream: str, rule: Rule) -> None:
        host, port = upstream.replace("http://", "").rsplit(":", 1)
        self.upstream = (host, int(port))
        self.rule = rule
        self.log: List[Tuple[float, str, str, str]] = []
        self._lock = threading.Lock()
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(128)
        self.url = "http://127.0.0.1:%d" % self._sock.getsockname()[1]
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        self._closed = True
        self._sock.close()

    def requests(self, path_part: str) -> List[Tuple[float, str, str, str]]:
        with self._lock:
            return [r for r in self.log if path_part in r[2]]

    def _accept(self) -> None:
        while not self._closed:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        f = conn.makefile("rb")
        try:
            while True:
                req = _read_request(f)
                if req is None:
                    return
                method, path, raw = req
                action = self.rule(method, path)
                with self._lock:
                    self.log.append((time.monotonic(), method, path, action if isinstance(action, str) else "answer"))
                if isinstance(action, bytes):
                    conn.sendall(action)
                    continue
                answer = self._forward(raw)
                if action == "drop":
                    return
                conn.sendall(answer)
                return  # the answer says Connection: close
        except OSError:
            return
        finally:
            f.close()
            conn.close()

    def _forward(self, raw: bytes) -> bytes:
        with socket.create_connection(self.upstream) as up:
            up.sendall(raw)
            parts = []
            while True:
                b = up.recv(65536)
                if not b:
                    break
                parts.append(b)
        return b"".join(parts)


def _read_request(f: "socket.SocketIO") -> Optional[Tuple[str, str, bytes]]:
    head = b""
    while not head.endswith(b"\r\n\r\n"):
        line = f.readline()
        if not line:
            return None
        head += line
    lines = head.decode("latin-1").split("\r\n")
    method, path, _ = lines[0].split(" ", 2)
    length = 0
    kept = [lines[0]]
    for line in lines[1:]:
        if not line:
            continue
        k, _, v = line.partition(":")
        if k.strip().lower() == "content-length":
            length = int(v.strip())
        if k.strip().lower() == "connection":
            continue
        kept.append(line)
    kept.append("Connection: close")
    body = f.read(length) if length else b""
    return method, path, ("\r\n".join(kept) + "\r\n\r\n").encode("latin-1") + body


def busy(retry_after: int) -> bytes:
    """A 503 busy answer with Retry-After."""
    body = b'{"type":"https://jobd.dev/problems/busy","title":"Too many pending requests","status":503,"detail":"busy"}'
    return (
        b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/problem+json\r\n"
        + b"Retry-After: %d\r\nContent-Length: %d\r\n\r\n" % (retry_after, len(body)) + body
    )

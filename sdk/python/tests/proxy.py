"""A small HTTP/1.1 proxy for the tests: it forwards the requests of each
client connection to the server over one kept-alive connection of its own
and can, by rule, drop an answer (the client's connection closed without a
byte, after the server carried the request out) or answer in the server's
place (a 503 with Retry-After, a 404 for a route it hides)."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

#: A rule sees (method, path) and returns "forward", "drop" (forward, then
#: close the client's connection without the answer), "drop-ok" (drop the
#: answer if it is a 200, else pass it on), or the raw answer to send
#: instead of forwarding.
Rule = Callable[[str, str], object]


class Proxy:
    def __init__(self, upstream: str, rule: Rule) -> None:
        host, port = upstream.replace("http://", "").rsplit(":", 1)
        self.upstream = (host, int(port))
        self.rule = rule
        self.log: List[Tuple[float, str, str, str]] = []
        self.dropped: List[str] = []
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
        up: Optional[socket.socket] = None
        upf: Any = None
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
                if up is None:
                    up = socket.create_connection(self.upstream)
                    upf = up.makefile("rb")
                up.sendall(raw)
                answer, close = _read_answer(upf)
                if action == "drop" or (action == "drop-ok" and answer.startswith(b"HTTP/1.1 200")):
                    with self._lock:
                        self.dropped.append(path)
                    return
                conn.sendall(answer)
                if close:
                    return
        except OSError:
            return
        finally:
            f.close()
            conn.close()
            if upf is not None:
                upf.close()
            if up is not None:
                up.close()


def _read_head(f: Any) -> Optional[Tuple[List[str], Dict[str, str], bytes]]:
    head = b""
    while not head.endswith(b"\r\n\r\n"):
        line = f.readline()
        if not line:
            return None
        head += line
    lines = head.decode("latin-1").split("\r\n")
    hdr: Dict[str, str] = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        if k:
            hdr[k.strip().lower()] = v.strip()
    return lines, hdr, head


def _read_request(f: Any) -> Optional[Tuple[str, str, bytes]]:
    got = _read_head(f)
    if got is None:
        return None
    lines, hdr, head = got
    method, path, _ = lines[0].split(" ", 2)
    length = int(hdr.get("content-length", "0"))
    body = f.read(length) if length else b""
    return method, path, head + body


def _read_answer(f: Any) -> Tuple[bytes, bool]:
    """Reads one answer (Content-Length or chunked); returns it and whether
    the server closes the connection after it."""
    got = _read_head(f)
    if got is None:
        raise OSError("upstream closed")
    _, hdr, head = got
    body = b""
    if "content-length" in hdr:
        body = f.read(int(hdr["content-length"]))
    elif "chunked" in hdr.get("transfer-encoding", ""):
        while True:
            size_line = f.readline()
            body += size_line
            size = int(size_line.split(b";")[0].strip() or b"0", 16)
            if size == 0:
                body += f.readline()
                break
            body += f.read(size + 2)
    return head + body, hdr.get("connection", "").lower() == "close"


def busy(retry_after: int) -> bytes:
    """A 503 busy answer with Retry-After."""
    body = b'{"type":"https://jobd.dev/problems/busy","title":"Too many pending requests","status":503,"detail":"busy"}'
    return (
        b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/problem+json\r\n"
        + b"Retry-After: %d\r\nContent-Length: %d\r\n\r\n" % (retry_after, len(body)) + body
    )


def no_route(method: str, path: str) -> bytes:
    """A 404 not-found answer, as a server without the route gives."""
    body = ('{"type":"https://jobd.dev/problems/not-found","title":"Not found","status":404,'
            '"detail":"no route %s %s"}' % (method, path)).encode()
    return (
        b"HTTP/1.1 404 Not Found\r\nContent-Type: application/problem+json\r\n"
        + b"Content-Length: %d\r\n\r\n" % len(body) + body
    )

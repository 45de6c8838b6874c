"""HTTP/1.1 transports of the SDK: a thread-safe pool of ``http.client``
connections for :class:`jobd.Client`, and a small HTTP/1.1 client on
asyncio streams for :class:`jobd.AsyncClient` and the worker.

Both keep connections alive and reuse them (a worker with 64 slots holds
about as many connections, never one per request). An idle connection the
server has closed (its idle timeout) is dropped before use; a request that
still gets no byte of answer on a reused connection is sent once more on a
fresh one when it is idempotent (``Request.replayable``), as Go's transport
does. Any other failure to get an answer is a
:class:`~jobd.errors.TransportError`.

Why asyncio streams rather than ``http.client`` in a thread pool for the
async side: a worker runs one event loop; with a thread pool each request
would cost a hand-over to a thread and back (and the GIL between them), and
the long-polling claims and event streams would each hold a thread. On
streams a request is a write and a few reads on the loop itself.
"""

from __future__ import annotations

import asyncio
import http.client
import select
import socket
import ssl
import sys
import threading
import urllib.parse
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Dict, Iterator, List, Optional, Sequence, Tuple

from .errors import TransportError

__all__ = ["Request", "Response", "Endpoint", "SyncTransport", "AsyncTransport", "StreamResponse", "AsyncStreamResponse"]

USER_AGENT = "jobd-python"


@dataclass
class Request:
    """One request: ``path`` is below the server's base path and already
    escaped; ``body`` is the JSON text to send, or ``None``."""

    method: str
    path: str
    query: Sequence[Tuple[str, str]] = ()
    body: Optional[bytes] = None
    headers: Dict[str, str] = field(default_factory=dict)
    timeout: Optional[float] = None
    #: Whether sending the request twice does what sending it once does
    #: (default: GET, HEAD, PUT, DELETE). Only such a request is sent again
    #: on a fresh connection when a kept-alive one gave no answer at all
    #: (the server may have carried out the first).
    idempotent: Optional[bool] = None

    def replayable(self) -> bool:
        if self.idempotent is not None:
            return self.idempotent
        return self.method in ("GET", "HEAD", "PUT", "DELETE")


@dataclass
class Response:
    """A whole answer; header names are lower-case."""

    status: int
    headers: Dict[str, str]
    body: bytes

    def retry_after(self) -> Optional[float]:
        """The ``Retry-After`` delay in seconds, when it is a number."""
        v = self.headers.get("retry-after", "")
        try:
            s = float(v)
        except ValueError:
            return None
        return s if s > 0 else None


class Endpoint:
    """The server's address, credential and TLS settings, and how to write
    a request's head."""

    def __init__(self, base_url: str, key: Optional[str], ssl_context: Optional[ssl.SSLContext]) -> None:
        u = urllib.parse.urlsplit(base_url.rstrip("/"))
        if u.scheme not in ("http", "https") or not u.hostname:
            raise ValueError("jobd: server URL %r: want http://host:port or https://host:port" % base_url)
        self.https = u.scheme == "https"
        self.host = u.hostname
        self.port = u.port or (443 if self.https else 80)
        self.base_path = u.path
        netloc = u.netloc.rsplit("@", 1)[-1]
        self.host_header = netloc
        self.ssl_context = ssl_context if ssl_context is not None else (ssl.create_default_context() if self.https else None)
        self.base_headers = {"Host": self.host_header, "User-Agent": USER_AGENT, "Accept": "application/json"}
        if key:
            self.base_headers["Authorization"] = "Bearer " + key
        self.base_url = "%s://%s%s" % (u.scheme, netloc, self.base_path)

    def target(self, req: Request) -> str:
        t = self.base_path + req.path
        if req.query:
            t += "?" + urllib.parse.urlencode(list(req.query))
        return t

    def head(self, req: Request) -> bytes:
        """The request line and headers, with the JSON content type and
        length of a body (a server without an admin secret refuses a JSON
        body sent without ``Content-Type: application/json``)."""
        lines = ["%s %s HTTP/1.1" % (req.method, self.target(req))]
        hdr = dict(self.base_headers)
        if req.body is not None:
            hdr["Content-Type"] = "application/json"
            hdr["Content-Length"] = str(len(req.body))
        elif req.method in ("POST", "PUT", "PATCH"):
            hdr["Content-Length"] = "0"
        hdr.update(req.headers)
        for k, v in hdr.items():
            lines.append("%s: %s" % (k, v))
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def _closed_by_peer(sock: socket.socket) -> bool:
    """Whether an idle kept-alive socket was closed by the server (its
    idle timeout): it is readable, and reads nothing."""
    try:
        r, _, _ = select.select([sock], [], [], 0)
        if not r:
            return False
        return sock.recv(1, socket.MSG_PEEK) == b""
    except (OSError, ValueError):
        return True


# --- the synchronous transport -------------------------------------------


class StreamResponse:
    """An answer being read (an event stream); close it when done."""

    def __init__(self, status: int, headers: Dict[str, str], resp: http.client.HTTPResponse, conn: http.client.HTTPConnection) -> None:
        self.status = status
        self.headers = headers
        self._resp = resp
        self._conn = conn

    def lines(self) -> Iterator[str]:
        """The body's lines, without their line ends, until it ends."""
        try:
            while True:
                line = self._resp.readline()
                if not line:
                    return
                yield line.decode("utf-8", "replace").rstrip("\r\n")
        except (OSError, http.client.HTTPException) as e:
            raise TransportError("jobd: event stream: %s" % e) from e

    def read(self) -> bytes:
        try:
            return self._resp.read()
        except (OSError, http.client.HTTPException) as e:
            raise TransportError("jobd: read answer: %s" % e) from e

    def close(self) -> None:
        self._conn.close()


class SyncTransport:
    """A pool of kept-alive ``http.client`` connections, safe for use by
    many threads."""

    def __init__(self, endpoint: Endpoint, timeout: float, max_idle: int = 32) -> None:
        self.ep = endpoint
        self.timeout = timeout
        self.max_idle = max_idle
        self._idle: List[http.client.HTTPConnection] = []
        self._lock = threading.Lock()

    def _new(self, timeout: float) -> http.client.HTTPConnection:
        if self.ep.https:
            return http.client.HTTPSConnection(self.ep.host, self.ep.port, timeout=timeout, context=self.ep.ssl_context)
        return http.client.HTTPConnection(self.ep.host, self.ep.port, timeout=timeout)

    def _get(self, timeout: float) -> Tuple[http.client.HTTPConnection, bool]:
        while True:
            with self._lock:
                c = self._idle.pop() if self._idle else None
            if c is None:
                return self._new(timeout), False
            if c.sock is None or _closed_by_peer(c.sock):
                c.close()
                continue
            c.sock.settimeout(timeout)
            return c, True

    def _put(self, c: http.client.HTTPConnection) -> None:
        with self._lock:
            if len(self._idle) < self.max_idle:
                self._idle.append(c)
                return
        c.close()

    def close(self) -> None:
        """Closes the idle connections."""
        with self._lock:
            idle, self._idle = self._idle, []
        for c in idle:
            c.close()

    def _send(self, req: Request) -> Tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
        timeout = req.timeout or self.timeout
        for _ in range(2):
            conn, reused = self._get(timeout)
            try:
                hdr = self.ep.head(req)
                if conn.sock is None:
                    conn.connect()
                    if conn.sock is not None:
                        conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                assert conn.sock is not None
                conn.sock.sendall(hdr + (req.body or b""))
                resp = http.client.HTTPResponse(conn.sock, method=req.method)
                try:
                    resp.begin()
                except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError) as e:
                    conn.close()
                    if reused and req.replayable():
                        continue
                    raise TransportError("jobd: %s %s: %s" % (req.method, req.path, e)) from e
                return conn, resp
            except (BrokenPipeError, ConnectionResetError) as e:
                conn.close()
                if reused:
                    continue
                raise TransportError("jobd: %s %s: %s" % (req.method, req.path, e)) from e
            except (OSError, http.client.HTTPException) as e:
                conn.close()
                raise TransportError("jobd: %s %s: %s" % (req.method, req.path, e)) from e
        raise TransportError("jobd: %s %s: the connection closed" % (req.method, req.path))

    def request(self, req: Request) -> Response:
        """Sends req and reads its whole answer."""
        conn, resp = self._send(req)
        try:
            body = resp.read()
        except (OSError, http.client.HTTPException) as e:
            conn.close()
            raise TransportError("jobd: %s %s: %s" % (req.method, req.path, e)) from e
        headers = {k.lower(): v for k, v in resp.getheaders()}
        if resp.will_close:
            conn.close()
        else:
            self._put(conn)
        return Response(resp.status, headers, body)

    def stream(self, req: Request) -> StreamResponse:
        """Sends req and returns its answer unread (its connection is not
        reused)."""
        conn, resp = self._send(req)
        headers = {k.lower(): v for k, v in resp.getheaders()}
        return StreamResponse(resp.status, headers, resp, conn)


# --- the asyncio transport -----------------------------------------------


if sys.version_info >= (3, 11):

    async def _within(coro: Any, timeout: float) -> Any:
        async with asyncio.timeout(timeout):
            return await coro

else:  # pragma: no cover - Python 3.9 and 3.10

    async def _within(coro: Any, timeout: float) -> Any:
        return await asyncio.wait_for(coro, timeout)


class _AConn:
    __slots__ = ("reader", "writer")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    def close(self) -> None:
        try:
            self.writer.close()
        except Exception:  # noqa: BLE001 - closing a broken socket
            pass


def _parse_head(block: bytes) -> Tuple[int, Dict[str, str]]:
    text = block.decode("latin-1")
    lines = text.split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/"):
        raise TransportError("jobd: bad status line %r" % lines[0][:80])
    status = int(parts[1])
    headers: Dict[str, str] = {}
    for line in lines[1:]:
        if not line:
            continue
        k, _, v = line.partition(":")
        k = k.strip().lower()
        v = v.strip()
        headers[k] = headers[k] + ", " + v if k in headers else v
    return status, headers


class AsyncStreamResponse:
    """An answer being read on the event loop (an event stream); close it
    when done."""

    def __init__(self, status: int, headers: Dict[str, str], conn: _AConn) -> None:
        self.status = status
        self.headers = headers
        self._conn = conn
        self._chunked = "chunked" in headers.get("transfer-encoding", "").lower()
        self._left = int(headers["content-length"]) if "content-length" in headers else -1

    async def chunks(self) -> AsyncIterator[bytes]:
        """The body, as the server sends it, until it ends."""
        r = self._conn.reader
        try:
            if self._chunked:
                while True:
                    size = int((await r.readline()).split(b";", 1)[0].strip() or b"0", 16)
                    if size == 0:
                        return
                    data = await r.readexactly(size)
                    await r.readline()
                    yield data
            elif self._left >= 0:
                while self._left > 0:
                    data = await r.read(min(self._left, 65536))
                    if not data:
                        return
                    self._left -= len(data)
                    yield data
            else:
                while True:
                    data = await r.read(65536)
                    if not data:
                        return
                    yield data
        except (OSError, asyncio.IncompleteReadError, ValueError) as e:
            raise TransportError("jobd: event stream: %s" % e) from e

    async def lines(self) -> AsyncIterator[str]:
        """The body's lines, without their line ends, until it ends."""
        buf = b""
        async for data in self.chunks():
            buf += data
            while True:
                i = buf.find(b"\n")
                if i < 0:
                    break
                line, buf = buf[:i], buf[i + 1:]
                yield line.decode("utf-8", "replace").rstrip("\r")
        if buf:
            yield buf.decode("utf-8", "replace").rstrip("\r")

    async def read(self) -> bytes:
        out = b""
        async for data in self.chunks():
            out += data
        return out

    def close(self) -> None:
        self._conn.close()


class AsyncTransport:
    """A pool of kept-alive HTTP/1.1 connections on asyncio streams. Use it
    from one event loop."""

    def __init__(self, endpoint: Endpoint, timeout: float, max_idle: int = 128) -> None:
        self.ep = endpoint
        self.timeout = timeout
        self.max_idle = max_idle
        self._idle: List[_AConn] = []

    async def _open(self) -> _AConn:
        if self.ep.https:
            reader, writer = await asyncio.open_connection(
                self.ep.host, self.ep.port, ssl=self.ep.ssl_context, server_hostname=self.ep.host, limit=1 << 20
            )
        else:
            reader, writer = await asyncio.open_connection(self.ep.host, self.ep.port, limit=1 << 20)
        return _AConn(reader, writer)

    def _get(self) -> Optional[_AConn]:
        while self._idle:
            c = self._idle.pop()
            if not c.reader.at_eof() and not c.writer.is_closing():
                return c
            c.close()
        return None

    def _put(self, c: _AConn) -> None:
        if len(self._idle) < self.max_idle:
            self._idle.append(c)
        else:
            c.close()

    async def close(self) -> None:
        """Closes the idle connections."""
        idle, self._idle = self._idle, []
        for c in idle:
            c.close()

    async def _exchange(self, req: Request) -> Tuple[_AConn, int, Dict[str, str]]:
        data = self.ep.head(req) + (req.body or b"")
        for _ in range(2):
            conn = self._get()
            reused = conn is not None
            try:
                if conn is None:
                    conn = await self._open()
                conn.writer.write(data)
                await conn.writer.drain()
                try:
                    block = await conn.reader.readuntil(b"\r\n\r\n")
                except asyncio.IncompleteReadError as e:
                    conn.close()
                    if reused and not e.partial and req.replayable():
                        continue
                    raise TransportError("jobd: %s %s: the connection closed" % (req.method, req.path)) from e
                status, headers = _parse_head(block[:-4])
                return conn, status, headers
            except (ConnectionResetError, BrokenPipeError) as e:
                if conn is not None:
                    conn.close()
                if reused:
                    continue
                raise TransportError("jobd: %s %s: %s" % (req.method, req.path, e)) from e
            except (OSError, asyncio.LimitOverrunError, ValueError) as e:
                if conn is not None:
                    conn.close()
                raise TransportError("jobd: %s %s: %s" % (req.method, req.path, e)) from e
            except BaseException:
                if conn is not None:
                    conn.close()
                raise
        raise TransportError("jobd: %s %s: the connection closed" % (req.method, req.path))

    async def _request(self, req: Request) -> Response:
        conn, status, headers = await self._exchange(req)
        r = conn.reader
        try:
            if req.method == "HEAD" or status in (204, 304) or 100 <= status < 200:
                body = b""
            elif "content-length" in headers:
                body = await r.readexactly(int(headers["content-length"]))
            elif "chunked" in headers.get("transfer-encoding", "").lower():
                parts = []
                while True:
                    size = int((await r.readline()).split(b";", 1)[0].strip() or b"0", 16)
                    if size == 0:
                        while (await r.readline()) not in (b"\r\n", b"\n", b""):
                            pass
                        break
                    parts.append(await r.readexactly(size))
                    await r.readline()
                body = b"".join(parts)
            else:
                body = await r.read()
                headers["connection"] = "close"
        except (OSError, asyncio.IncompleteReadError, ValueError) as e:
            conn.close()
            raise TransportError("jobd: %s %s: %s" % (req.method, req.path, e)) from e
        except BaseException:
            conn.close()
            raise
        if headers.get("connection", "").lower() == "close":
            conn.close()
        else:
            self._put(conn)
        return Response(status, headers, body)

    async def request(self, req: Request) -> Response:
        """Sends req and reads its whole answer, within its timeout."""
        try:
            resp: Response = await _within(self._request(req), req.timeout or self.timeout)
            return resp
        except asyncio.TimeoutError as e:
            raise TransportError("jobd: %s %s: no answer in %ss" % (req.method, req.path, req.timeout or self.timeout)) from e

    async def stream(self, req: Request) -> AsyncStreamResponse:
        """Sends req and returns its answer unread (its connection is not
        reused)."""
        try:
            conn, status, headers = await _within(self._exchange(req), req.timeout or self.timeout)
        except asyncio.TimeoutError as e:
            raise TransportError("jobd: %s %s: no answer" % (req.method, req.path)) from e
        return AsyncStreamResponse(status, headers, conn)

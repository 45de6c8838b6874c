"""Server-Sent Events: the parser of ``text/event-stream`` lines and the
state a reconnecting follower of a job's stream keeps (the last event's id,
sent back as ``Last-Event-ID``; the server's ``retry:`` delay)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Dict, Optional

from ._http import Response
from .errors import APIError, InvalidRequestError, error_from_answer
from .models import Job

#: Failures in a row, without an event between them, after which a stream
#: is given up.
MAX_STREAM_FAILURES = 5
#: How long a stream may be silent before it is taken as broken: the server
#: writes a comment every 15 s.
STREAM_IDLE = 45.0


class StreamUnavailable(InvalidRequestError):
    """The answer to a stream was not an event stream (a proxy that does
    not pass them): ``wait`` long-polls instead."""


#: How long each long-poll of a wait without a stream asks the server to
#: hold its answer (the server's most).
LONG_POLL = 30.0


@dataclass
class SSEEvent:
    event: str
    data: str
    id: Optional[str]


class SSEParser:
    """Feeds on a stream's lines; returns each complete event."""

    def __init__(self) -> None:
        self.event = ""
        self.data: Optional[str] = None
        self.id: Optional[str] = None
        self.retry: Optional[float] = None

    def feed(self, line: str) -> Optional[SSEEvent]:
        if line == "":
            if self.data is None:
                self.event = ""
                return None
            ev = SSEEvent(self.event or "message", self.data, self.id)
            self.event, self.data = "", None
            return ev
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if name == "event":
            self.event = value
        elif name == "data":
            self.data = value if self.data is None else self.data + "\n" + value
        elif name == "id" and "\x00" not in value:
            self.id = value
        elif name == "retry" and value.isdigit():
            self.retry = int(value) / 1000.0
        return None


class StreamState:
    """What a follower of one job's stream knows between reconnections."""

    def __init__(self, last_event_id: Optional[str]) -> None:
        self.last_event_id = last_event_id
        self.failures = 0
        self.retry = 1.0
        self.done = False
        self.connections = 0
        self.parser = SSEParser()

    def begin(self) -> None:
        self.connections += 1
        self.parser = SSEParser()

    def answer(self, status: int, headers: Dict[str, str], body: bytes) -> Optional[APIError]:
        """Checks a stream's answer before its events: returns the error of
        a refusal (``None`` to read the events); sets ``done`` on 204 (the
        client has the final version)."""
        if status == 204:
            self.done = True
            return None
        if status != 200:
            ra = Response(status, headers, b"").retry_after()
            return error_from_answer(status, body, ra)
        if headers.get("content-type", "").split(";")[0].strip() != "text/event-stream":
            return StreamUnavailable(406, {"status": 406, "detail": "the server did not answer with an event stream"})
        return None

    def event(self, ev: SSEEvent) -> Optional[Job]:
        """Reads one event: a job version (``done`` once it is final), or
        raises the problem of an ``error`` event."""
        if ev.id is not None:
            self.last_event_id = ev.id
        if ev.event == "job":
            j = Job.from_json(json.loads(ev.data))
            self.failures = 0
            if j.final:
                self.done = True
            return j
        if ev.event == "error":
            try:
                p = json.loads(ev.data)
            except ValueError:
                p = {"status": 500, "detail": ev.data}
            status = p.get("status", 500) if isinstance(p, dict) else 500
            raise error_from_answer(int(status), ev.data.encode("utf-8"))
        return None

    def ended(self) -> float:
        """The stream ended or broke: returns the delay before the next
        connection."""
        if self.parser.retry is not None:
            self.retry = self.parser.retry
        return self.retry * (1 + self.failures)

"""The worker's outcome sender: complete, fail and release, and the
waits that end an attempt in their place.

Outcomes are queued by the handlers' completions and sent off the
handlers' path: a slot is free for the next claim as soon as its handler
returns, and the lease of a job whose outcome is on its way is kept in the
heartbeats until the server answers.

Outcomes queued in the same turn of the event loop, and those queued while
a batch is on its way, go together in one ``POST
/api/v1/worker/outcomes`` (up to 1 000, one answer each). A server without
that route (it answers 404 or 405) is sent one request per outcome, to the
routes ``complete``, ``fail`` and ``release``, from then on.

An outcome that got no answer (the connection broke) is sent again with
the same lease token until ``max(lease_ttl, 30 s)`` has passed: a server
with idempotent outcomes answers the repeat as it answered the first.

A wait (action ``wait``: ``POST /api/v1/worker/jobs/{id}/wait``, which
the batch route does not take) is always sent on its own route, with the
same care: its lease is kept in the heartbeats until the server answers.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import Any, Callable, Dict, List, Optional, Set, Tuple

from . import _ops
from ._http import Request
from .aclient import AsyncClient
from .errors import APIError, LeaseLostError, MethodNotAllowedError, NotFoundError, TransportError, ValidationError, error_from_answer
from .models import ClaimedJob, format_duration

log = logging.getLogger("jobd.worker")

#: The shortest time an outcome is sent again for when it gets no answer.
MIN_REPORT_TIME = 30.0
#: The most outcomes one request carries.
MAX_BATCH = 1000
#: Delays between the sends of an outcome that got no answer.
RESEND_MIN = 0.1
RESEND_MAX = 5.0


class _Item:
    __slots__ = ("job", "action", "body", "tag", "tries", "deadline", "delay")

    def __init__(self, job: ClaimedJob, action: str, body: Dict[str, Any], tag: Any) -> None:
        self.job = job
        self.action = action
        self.body = body
        self.tag = tag
        self.tries = 0
        self.deadline = time.monotonic() + max(job.lease_ttl or 0.0, MIN_REPORT_TIME)
        self.delay = RESEND_MIN

    def wire(self) -> Dict[str, Any]:
        """The item of a batch request."""
        out: Dict[str, Any] = {"id": self.job.id, "lease_token": self.job.lease_token, "outcome": self.action}
        out.update(self.body)
        return out


class Outcomes:
    """Sends the outcomes of a worker's jobs; see the module."""

    def __init__(self, client: AsyncClient, stats: Any, on_reported: Callable[[ClaimedJob, str, Optional[str], Any], None]) -> None:
        self._client = client
        self._stats = stats
        self._on_reported = on_reported
        self._queued: List[_Item] = []
        self._flush_scheduled = False
        self._in_flight = 0
        self._resends = 0
        self._tasks: Set["asyncio.Task[None]"] = set()
        self._pending: Dict[str, str] = {}
        #: Whether the server has the batch route: None until it answered.
        self.batch_route: Optional[bool] = None

    def put(self, job: ClaimedJob, action: str, body: Dict[str, Any], tag: Any) -> None:
        """Queues an outcome: action complete, fail, release or wait;
        ``tag`` is handed back with its answer."""
        body = dict(body)
        for k in ("retry_after", "throttle"):
            if body.get(k) is not None:
                body[k] = format_duration(body[k])
        if "error" in body:
            body["error"] = _ops.storable(str(body["error"]))
        self._pending[job.id] = job.lease_token
        if action == "wait":
            self._spawn(self._send_one(_Item(job, action, body, tag)))
            return
        self._queue(_Item(job, action, body, tag))

    def _queue(self, it: _Item) -> None:
        self._queued.append(it)
        if not self._flush_scheduled:
            self._flush_scheduled = True
            asyncio.get_running_loop().call_soon(self._flush)

    def pending_leases(self) -> List[Tuple[str, str]]:
        """The leases of the jobs whose outcomes are on their way."""
        return list(self._pending.items())

    def _spawn(self, coro: Any) -> None:
        t = asyncio.ensure_future(coro)
        self._tasks.add(t)
        t.add_done_callback(self._tasks.discard)

    def _flush(self) -> None:
        self._flush_scheduled = False
        if self.batch_route is False:
            items, self._queued = self._queued, []
            for it in items:
                self._spawn(self._send_one(it))
            return
        # One batch on its way at a time while the route is unknown; then
        # up to two, so that outcomes gather while one is answered.
        if self._in_flight >= (1 if self.batch_route is None else 2):
            return
        while self._queued and self._in_flight < (1 if self.batch_route is None else 2):
            items, self._queued = self._queued[:MAX_BATCH], self._queued[MAX_BATCH:]
            self._in_flight += 1
            self._spawn(self._send_batch(items))

    async def drain(self) -> None:
        """Waits until every queued outcome is answered or given up."""
        while self._queued or self._tasks or self._flush_scheduled or self._resends:
            if self._tasks:
                await asyncio.gather(*list(self._tasks), return_exceptions=True)
            elif self._resends:
                await asyncio.sleep(RESEND_MIN / 2)
            else:
                await asyncio.sleep(0)
                if self._queued and not self._flush_scheduled and not self._tasks:
                    self._flush()

    # --- the batch route ----------------------------------------------

    async def _send_batch(self, items: List[_Item]) -> None:
        try:
            await self._batch(items)
        finally:
            self._in_flight -= 1
            if self._queued and not self._flush_scheduled:
                self._flush_scheduled = True
                asyncio.get_running_loop().call_soon(self._flush)

    async def _batch(self, items: List[_Item]) -> None:
        body = json.dumps({"outcomes": [it.wire() for it in items]}, separators=(",", ":"), ensure_ascii=False).encode()
        # Not replayed by the transport: a lost answer is handled below.
        req = Request("POST", "/api/v1/worker/outcomes", body=body, idempotent=False)
        budget = max(0.0, min(it.deadline for it in items) - time.monotonic())
        try:
            answers = await self._client.call(_ops.Op(req, _outcome_answers), retry_503=budget)
        except (NotFoundError, MethodNotAllowedError):
            if self.batch_route is None:
                log.info("jobd worker: the server has no POST /api/v1/worker/outcomes: one request per outcome")
                self.batch_route = False
                for it in items:
                    self._spawn(self._send_one(it))
                return
            raise
        except TransportError as e:
            for it in items:
                self._no_answer(it, e)
            return
        except APIError as e:
            # The request refused whole (a body the server cannot read):
            # each outcome on its own route says which.
            log.warning("jobd worker: outcomes refused as a batch (%s); sending them one by one", e)
            for it in items:
                self._spawn(self._send_one(it))
            return
        self.batch_route = True
        if len(answers) != len(items):
            log.error("jobd worker: %d answers to %d outcomes; sending them one by one", len(answers), len(items))
            for it in items:
                self._spawn(self._send_one(it))
            return
        for it, (status, state, err) in zip(items, answers):
            if status == 200:
                self._done(it, state)
            else:
                self._refused(it, err)

    def _no_answer(self, it: _Item, e: TransportError) -> None:
        """An outcome got no answer: send it again, after a delay, until its
        deadline."""
        now = time.monotonic()
        if now + it.delay > it.deadline:
            log.error("jobd worker: %s of job %s got no answer before its lease would end; giving up: %s", it.action, it.job.id, e)
            self._stats.outcome_errors += 1
            self._done(it, None)
            return
        it.tries += 1
        self._stats.resent += 1
        log.info("jobd worker: %s of job %s got no answer; sending it again: %s", it.action, it.job.id, e)
        loop = asyncio.get_running_loop()
        delay, it.delay = it.delay, min(2 * it.delay, RESEND_MAX)
        self._resends += 1
        loop.call_later(delay, self._requeue, it)

    def _requeue(self, it: _Item) -> None:
        self._resends -= 1
        if self.batch_route is False or it.action == "wait":
            self._spawn(self._send_one(it))
        else:
            self._queue(it)

    # --- one outcome a request ----------------------------------------

    async def _send_one(self, it: _Item) -> None:
        op = _ops.finish(it.job.id, it.job.lease_token, it.action, it.body)
        while True:
            try:
                state: str = await self._client.call(op, retry_503=max(0.0, it.deadline - time.monotonic()))
            except TransportError as e:
                if time.monotonic() + it.delay > it.deadline:
                    self._no_answer(it, e)  # past its deadline: gives up
                    return
                it.tries += 1
                self._stats.resent += 1
                log.info("jobd worker: %s of job %s got no answer; sending it again: %s", it.action, it.job.id, e)
                await asyncio.sleep(it.delay)
                it.delay = min(2 * it.delay, RESEND_MAX)
                continue
            except APIError as e:
                if self._refused(it, e):
                    return
                op = _ops.finish(it.job.id, it.job.lease_token, it.action, it.body)
                continue
            self._done(it, state)
            return

    # --- answers --------------------------------------------------------

    def _refused(self, it: _Item, e: Optional[APIError]) -> bool:
        """An outcome refused: logs and counts it. Returns False when it is
        to be sent again, changed (a result the server cannot store fails
        the job for good, saying why, as the engine does)."""
        job = it.job
        if isinstance(e, LeaseLostError):
            if it.tries > 0:
                # The first send may have been applied and its answer lost:
                # a server without idempotent outcomes refuses the repeat.
                log.warning("jobd worker: %s of job %s sent again after a lost answer was refused (lease-lost): "
                            "the first may have been applied: %s", it.action, job.id, e)
                self._stats.outcome_errors += 1
            else:
                log.warning("jobd worker: lease of job %s lost; its %s was refused", job.id, it.action)
                self._stats.dropped += 1
            self._done(it, None)
            return True
        if isinstance(e, ValidationError) and it.action == "complete":
            log.warning("jobd worker: result of job %s refused: %s", job.id, e)
            it.action = "fail"
            it.body = {"error": _ops.storable("result refused by the server: %s" % e.detail), "retryable": False}
            if self.batch_route is False:
                return False
            self._queue(it)
            return True
        log.error("jobd worker: %s of job %s refused: %s", it.action, job.id, e)
        self._stats.outcome_errors += 1
        self._done(it, None)
        return True

    def _done(self, it: _Item, state: Optional[str]) -> None:
        self._pending.pop(it.job.id, None)
        self._on_reported(it.job, it.action, state, it.tag)


def _outcome_answers(resp: Any) -> List[Tuple[int, str, Optional[APIError]]]:
    """The answers of a batch of outcomes: status, state and the error of a
    refused one."""
    d = json.loads(resp.body) if resp.body else {}
    out: List[Tuple[int, str, Optional[APIError]]] = []
    for a in d.get("outcomes") or []:
        status = int(a.get("status") or 0)
        if status == 200:
            out.append((200, str(a.get("state", "")), None))
        else:
            problem = a.get("problem") or {"status": status}
            out.append((status, "", error_from_answer(status, json.dumps(problem).encode())))
    return out

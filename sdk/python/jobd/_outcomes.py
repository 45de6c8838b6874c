"""The worker's outcome sender: complete, fail and release calls.

Outcomes are queued by the handlers' completions and sent off the
handlers' path: a slot is free for the next claim as soon as its handler
returns, and the lease of a job whose outcome is on its way is kept in the
heartbeats until the server answers.

Outcomes queued in the same turn of the event loop are taken together
(:meth:`Outcomes._flush`). Today's servers take one outcome a request, so
each is sent on its own (over the client's kept-alive connections); once
the server has ``POST /api/v1/worker/outcomes``, the batch goes in one
request. An outcome that got no answer (the connection broke) is sent
again with the same lease token until ``max(lease_ttl, 30 s)`` has passed:
a server whose outcomes are idempotent answers the repeat as it answered
the first.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any, Callable, Dict, List, Optional, Set, Tuple

from . import _ops
from .aclient import AsyncClient
from .errors import APIError, LeaseLostError, TransportError, ValidationError
from .models import ClaimedJob, format_duration

log = logging.getLogger("jobd.worker")

#: The shortest time an outcome is sent again for when it gets no answer.
MIN_REPORT_TIME = 30.0


class _Item:
    __slots__ = ("job", "action", "body", "tag")

    def __init__(self, job: ClaimedJob, action: str, body: Dict[str, Any], tag: Any = None) -> None:
        self.job = job
        self.action = action
        self.body = body
        self.tag = tag


class Outcomes:
    """Sends the outcomes of a worker's jobs; see the module."""

    def __init__(self, client: AsyncClient, stats: Any, on_reported: Callable[[ClaimedJob, str, Optional[str], Any], None]) -> None:
        self._client = client
        self._stats = stats
        self._on_reported = on_reported
        self._queued: List[_Item] = []
        self._flush_scheduled = False
        self._tasks: Set["asyncio.Task[None]"] = set()
        self._pending: Dict[str, str] = {}

    def put(self, job: ClaimedJob, action: str, body: Dict[str, Any], tag: Any) -> None:
        """Queues an outcome: action complete, fail or release; ``tag`` is
        handed back with its answer."""
        if "retry_after" in body and body["retry_after"] is not None:
            body = dict(body, retry_after=format_duration(body["retry_after"]))
        if "throttle" in body and body["throttle"] is not None:
            body = dict(body, throttle=format_duration(body["throttle"]))
        if "error" in body:
            body = dict(body, error=_ops.storable(str(body["error"])))
        self._queued.append(_Item(job, action, body, tag))
        self._pending[job.id] = job.lease_token
        if not self._flush_scheduled:
            self._flush_scheduled = True
            asyncio.get_running_loop().call_soon(self._flush)

    def pending_leases(self) -> List[Tuple[str, str]]:
        """The leases of the jobs whose outcomes are on their way."""
        return list(self._pending.items())

    def _flush(self) -> None:
        self._flush_scheduled = False
        items, self._queued = self._queued, []
        # One request per outcome until the server has the batch route.
        for it in items:
            t = asyncio.ensure_future(self._send(it))
            self._tasks.add(t)
            t.add_done_callback(self._tasks.discard)

    async def drain(self) -> None:
        """Waits until every queued outcome is answered or given up."""
        while self._queued or self._tasks or self._flush_scheduled:
            if self._flush_scheduled or self._queued:
                await asyncio.sleep(0)
                continue
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def _send(self, it: _Item) -> None:
        job = it.job
        budget = max(job.lease_ttl or 0.0, MIN_REPORT_TIME)
        deadline = time.monotonic() + budget
        op = _ops.finish(job.id, job.lease_token, it.action, it.body)
        tries = 0
        delay = 0.1
        state: Optional[str] = None
        try:
            while True:
                try:
                    got: str = await self._client.call(op, retry_503=max(0.0, deadline - time.monotonic()))
                    state = got
                    return
                except LeaseLostError as e:
                    if tries > 0:
                        # The first request may have been applied: its
                        # answer was lost, and this server does not answer a
                        # repeated outcome as it answered the first.
                        log.warning("jobd worker: %s of job %s sent again after a lost answer was refused (lease-lost): "
                                    "the first may have been applied: %s", it.action, job.id, e)
                        self._stats.outcome_errors += 1
                    else:
                        log.warning("jobd worker: lease of job %s lost; its %s was refused", job.id, it.action)
                        self._stats.dropped += 1
                    return
                except ValidationError as e:
                    if it.action == "complete":
                        # A result the server cannot store fails the job
                        # for good, saying why, as the engine does.
                        log.warning("jobd worker: result of job %s refused: %s", job.id, e)
                        it = _Item(job, "fail", {"error": _ops.storable("result refused by the server: %s" % e.detail), "retryable": False}, it.tag)
                        op = _ops.finish(job.id, job.lease_token, "fail", it.body)
                        continue
                    log.error("jobd worker: %s of job %s refused: %s", it.action, job.id, e)
                    self._stats.outcome_errors += 1
                    return
                except APIError as e:
                    log.error("jobd worker: %s of job %s refused: %s", it.action, job.id, e)
                    self._stats.outcome_errors += 1
                    return
                except TransportError as e:
                    if time.monotonic() + delay > deadline:
                        log.error("jobd worker: %s of job %s got no answer for %ss; giving up: %s", it.action, job.id, budget, e)
                        self._stats.outcome_errors += 1
                        return
                    tries += 1
                    self._stats.resent += 1
                    log.info("jobd worker: %s of job %s got no answer; sending it again: %s", it.action, job.id, e)
                    await asyncio.sleep(delay)
                    delay = min(2 * delay, 5.0)
        finally:
            self._pending.pop(job.id, None)
            self._on_reported(job, it.action, state, it.tag)

"""The remote worker: claims jobs over HTTP and runs their handlers.

It mirrors the Go SDK's worker (``client.NewWorker``): one heartbeat for
every lease it holds, at the shorter of its interval and a third of the
shortest lease; a handler stopped when its lease is lost, its cancel is
requested or its deadline passes; requests answered 503 sent again after
``Retry-After``; on shutdown, claims stopped, running jobs given
``shutdown_timeout`` to finish, then cancelled and released. It adds per
queue concurrency (the ETL loader's ``[{"queue": …, "concurrency": N}]``),
blocking handlers in a thread pool, and an outcome whose answer was lost
sent again.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import signal
import time
import threading
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Set, Union

from . import _ops
from .aclient import AsyncClient
from .errors import ConflictError, ForbiddenError, JobdError, UnauthorizedError
from .failures import Wait, describe, failure_body
from .handlers import Handler, Handlers, QueueConfig, QueuesSpec, parse_queues
from .models import ClaimedJob, LeaseState, SpawnedChild
from ._outcomes import Outcomes
from .task import SyncTask, Task

__all__ = ["Worker", "WorkerStats"]

log = logging.getLogger("jobd.worker")

#: How long a shutdown waits, after cancelling the handlers that outlived
#: ``shutdown_timeout``, before it releases their jobs without them.
HARD_STOP_GRACE = 5.0

#: The most leases one heartbeat may carry.
MAX_LEASES = 1000


@dataclass
class WorkerStats:
    """What a worker did, counted since it started."""

    claimed: int = 0
    succeeded: int = 0
    failed: int = 0
    released: int = 0
    #: attempts that ended waiting (children, a signal, a time)
    waited: int = 0
    #: outcomes dropped because the lease was lost or the deadline passed
    dropped: int = 0
    #: outcomes sent again after a request that got no answer
    resent: int = 0
    #: outcomes the server refused (other than lease-lost), or never answered
    outcome_errors: int = 0
    #: jobs released by a shutdown without their handlers, which ignored
    #: their cancel (a thread of such a handler may still run)
    abandoned: int = 0
    #: the states the server answered the outcomes with, by job id
    states: Dict[str, str] = field(default_factory=dict)


class _Run:
    """One job being handled here."""

    __slots__ = ("job", "queue", "handler", "cause", "_stop_event", "fut", "abandoned", "timer")

    def __init__(self, job: ClaimedJob, queue: "_Queue", handler: Optional[Handler]) -> None:
        self.job = job
        self.queue = queue
        self.handler = handler
        self.cause: Optional[str] = None
        # Made for threaded handlers only (an async one is cancelled).
        self._stop_event: Optional[threading.Event] = None
        self.fut: Optional["asyncio.Future[Any]"] = None
        self.abandoned = False
        self.timer: Optional[asyncio.TimerHandle] = None

    @property
    def stop_event(self) -> threading.Event:
        if self._stop_event is None:
            self._stop_event = threading.Event()
            if self.cause is not None:
                self._stop_event.set()
        return self._stop_event


class _Queue:
    def __init__(self, cfg: QueueConfig) -> None:
        self.name = cfg.queue
        self.concurrency = cfg.concurrency
        self.running = 0
        # Outcomes of this queue's jobs on their way: at most concurrency of
        # them, so that a server slow to take outcomes is not handed more
        # claims too.
        self.reporting = 0
        self.slot_free = asyncio.Event()

    def free(self) -> int:
        if self.reporting >= self.concurrency:
            return 0
        return self.concurrency - self.running


class Worker:
    """A remote worker of one jobd server.

    Args:
        server: the server's URL, or an :class:`~jobd.AsyncClient` made with
            a worker's key.
        key: the worker's key (scope ``worker``), with a URL.
        queues: the queues to claim from with their concurrency, as the ETL
            loader writes them (``[{"queue": "load.cbr", "concurrency":
            2}]``, or that as JSON), or queue names that share
            ``concurrency``.
        concurrency: the concurrency of queues given by name.
        handlers: handlers registered beforehand (see
            :class:`~jobd.Handlers`); :meth:`handler` adds more.
        threads: the size of the thread pool of blocking handlers (default:
            the sum of the queues' concurrency).
        claim_wait: how long one claim long-polls (at most 60 s).
        heartbeat_interval: the gap between heartbeats (shorter when a
            job's lease is under three times it).
        shutdown_timeout: how long a shutdown waits for running jobs before
            it cancels them and releases them (queued again at once, their
            attempt not counted); 20 s, within the 30 s orchestrators allow
            between SIGTERM and SIGKILL.
        hard_stop_grace: how long a shutdown waits, after cancelling the
            handlers that outlived ``shutdown_timeout``, before it releases
            the jobs of those still running without them (5 s).
    """

    def __init__(
        self,
        server: Union[str, AsyncClient],
        key: Optional[str] = None,
        *,
        queues: QueuesSpec,
        concurrency: int = 1,
        handlers: Optional[Handlers] = None,
        threads: Optional[int] = None,
        claim_wait: float = 30.0,
        heartbeat_interval: float = 10.0,
        shutdown_timeout: float = 20.0,
        hard_stop_grace: float = HARD_STOP_GRACE,
        name: str = "",
    ) -> None:
        self._server = server
        self._key = key
        self.queues = parse_queues(queues, concurrency)
        self.handlers = Handlers()
        if handlers is not None:
            self.handlers.update(handlers)
        self.threads = threads or sum(q.concurrency for q in self.queues)
        self.claim_wait = claim_wait
        self.heartbeat_interval = heartbeat_interval
        self.shutdown_timeout = shutdown_timeout
        self.hard_stop_grace = hard_stop_grace
        self.name = name
        self.stats = WorkerStats()
        self._client: Optional[AsyncClient] = None
        self._running: Dict[str, _Run] = {}
        self._stopping: Optional[asyncio.Event] = None
        self._hard: Optional[asyncio.Event] = None
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._pool: Optional[concurrent.futures.ThreadPoolExecutor] = None
        self._idle: Optional[asyncio.Event] = None
        self._hb_wake: Optional[asyncio.Event] = None
        self._outcomes: Optional[Outcomes] = None
        self._fatal: Optional[BaseException] = None
        self._ready = threading.Event()
        self._claims: List["asyncio.Future[None]"] = []

    def handler(self, kind: str, *, threaded: Optional[bool] = None) -> Any:
        """A decorator registering the handler of ``kind`` (``"*"``: every
        kind without one). An ``async def`` handler gets a
        :class:`~jobd.Task` and runs on the worker's event loop; a plain
        function gets a :class:`~jobd.SyncTask` and runs in the thread pool.
        Its return value (JSON) is the job's result; an exception fails the
        job (see :mod:`jobd.failures`)."""
        return self.handlers.handler(kind, threaded=threaded)

    # --- life ---------------------------------------------------------

    def stop(self, *, hard: bool = False) -> None:
        """Asks the worker to stop, from any thread: it stops claiming,
        waits ``shutdown_timeout`` for the running jobs (not with
        ``hard``), cancels the rest and releases them."""
        loop = self._loop
        if loop is None:
            return
        loop.call_soon_threadsafe(self._stop, hard)

    def _stop(self, hard: bool) -> None:
        if self._stopping is not None:
            self._stopping.set()
        if hard and self._hard is not None:
            self._hard.set()

    def wait_started(self, timeout: Optional[float] = None) -> bool:
        """Blocks until :meth:`run` has started (for threads that call
        :meth:`stop`)."""
        return self._ready.wait(timeout)

    def run_forever(self) -> None:
        """Runs the worker on a new event loop until SIGTERM or SIGINT (a
        second one skips the wait for running jobs)."""
        asyncio.run(self.run(handle_signals=True))

    async def run(self, *, handle_signals: bool = False) -> None:
        """Claims and runs jobs until :meth:`stop` (or, with
        ``handle_signals``, SIGTERM or SIGINT), then shuts down gracefully.
        Raises the server's refusal of the worker (401, 403) after the
        shutdown."""
        loop = asyncio.get_running_loop()
        self._loop = loop
        self._stopping = asyncio.Event()
        self._hard = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._hb_wake = asyncio.Event()
        owned = isinstance(self._server, str)
        client = AsyncClient(self._server, self._key) if isinstance(self._server, str) else self._server
        self._client = client
        self._outcomes = Outcomes(client, self.stats, self._reported)
        if self.handlers.threaded:
            self._pool = concurrent.futures.ThreadPoolExecutor(self.threads, thread_name_prefix="jobd-handler")
        if handle_signals:
            self._install_signals(loop)
        queues = [_Queue(q) for q in self.queues]
        hb = asyncio.ensure_future(self._heartbeats())
        claims = self._claims = [asyncio.ensure_future(self._claim_loop(q)) for q in queues]
        self._ready.set()
        try:
            await self._stopping.wait()
            for c in claims:
                c.cancel()
            await asyncio.gather(*claims, return_exceptions=True)
            await self._shutdown()
        finally:
            hb.cancel()
            await asyncio.gather(hb, return_exceptions=True)
            if self._pool is not None:
                self._pool.shutdown(wait=False)
            if handle_signals:
                for s in (signal.SIGTERM, signal.SIGINT):
                    loop.remove_signal_handler(s)
            if owned:
                await client.close()
            self._ready.clear()
        if self._fatal is not None:
            raise self._fatal

    def _install_signals(self, loop: asyncio.AbstractEventLoop) -> None:
        def on_signal() -> None:
            assert self._stopping is not None and self._hard is not None
            if self._stopping.is_set():
                log.warning("jobd worker: second signal: cancelling the running jobs now")
                self._hard.set()
            else:
                log.info("jobd worker: stopping: no more claims; waiting up to %ss for %d running jobs",
                         self.shutdown_timeout, len(self._running))
                self._stopping.set()

        for s in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(s, on_signal)

    async def _wait_idle(self, timeout: float) -> bool:
        assert self._idle is not None and self._hard is not None
        if not self._running:
            return True
        idle = asyncio.ensure_future(self._idle.wait())
        hard = asyncio.ensure_future(self._hard.wait())
        try:
            await asyncio.wait([idle, hard], timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            idle.cancel()
            hard.cancel()
        return not self._running

    async def _shutdown(self) -> None:
        """Waits for the running jobs, then cancels and releases them, and
        sends the outcomes still pending."""
        assert self._outcomes is not None and self._hard is not None
        if not await self._wait_idle(self.shutdown_timeout):
            for r in list(self._running.values()):
                self._stop_run(r, "shutdown")
            self._hard.clear()
            if not await self._wait_idle(self.hard_stop_grace):
                await self._abandon()
        await self._outcomes.drain()

    async def _abandon(self) -> None:
        """Releases the jobs whose handlers still run after their cancel;
        their outcomes, if they ever come, are dropped."""
        assert self._outcomes is not None
        for jid, r in list(self._running.items()):
            r.abandoned = True
            del self._running[jid]
            self.stats.abandoned += 1
            log.error("jobd worker: handler of job %s still running after its cancel; releasing its job without it", jid)
            self._outcomes.put(r.job, "release", {}, None)
        self._check_idle()

    # --- claims -------------------------------------------------------

    async def _claim_loop(self, q: _Queue) -> None:
        assert self._client is not None and self._stopping is not None
        backoff = 1.0
        while not self._stopping.is_set():
            free = q.free()
            if free <= 0:
                q.slot_free.clear()
                await q.slot_free.wait()
                continue
            try:
                jobs = await self._client.call(_ops.claim([q.name], free, self.claim_wait))
            except (UnauthorizedError, ForbiddenError) as e:
                log.error("jobd worker: the server refuses the worker: %s", e)
                self._fatal = e
                self._stopping.set()
                return
            except JobdError as e:
                log.warning("jobd worker: claim from %s failed; again in %ss: %s", q.name, backoff, e)
                await asyncio.sleep(backoff)
                backoff = min(2 * backoff, 30.0)
                continue
            backoff = 1.0
            for j in jobs:
                self._start(q, j)

    # --- jobs ---------------------------------------------------------

    def _start(self, q: _Queue, j: ClaimedJob) -> None:
        assert self._loop is not None and self._idle is not None
        self.stats.claimed += 1
        h = self.handlers.get(j.kind)
        r = _Run(j, q, h)
        self._running[j.id] = r
        q.running += 1
        self._idle.clear()
        if j.lease_ttl is not None and j.lease_ttl / 3 < self.heartbeat_interval and self._hb_wake is not None:
            self._hb_wake.set()
        if h is None:
            fut: "asyncio.Future[Any]" = self._loop.create_future()
            fut.set_exception(_NoHandler("no handler for kind %r on this worker" % j.kind))
        elif h.threaded:
            assert self._pool is not None
            task = SyncTask(self, r, self._loop)
            fut = self._loop.run_in_executor(self._pool, h.fn, task)
        else:
            fut = asyncio.ensure_future(h.fn(Task(self, r)))
        r.fut = fut
        if j.deadline is not None:
            left = j.deadline.timestamp() - time.time()
            r.timer = self._loop.call_later(max(left, 0.0), self._stop_run, r, "timed-out")
        fut.add_done_callback(lambda f: self._done(r, f))

    def _stop_run(self, r: _Run, cause: str) -> None:
        """Stops a running job's handler, with the reason its task shows."""
        if r.cause is not None or r.fut is None or r.fut.done():
            return
        r.cause = cause
        if r._stop_event is not None:
            r._stop_event.set()
        if r.handler is not None and not r.handler.threaded:
            r.fut.cancel()

    def _stop_id(self, job_id: str, cause: str) -> None:
        r = self._running.get(job_id)
        if r is not None:
            self._stop_run(r, cause)

    def _done(self, r: _Run, fut: "asyncio.Future[Any]") -> None:
        """A handler ended: queue its outcome and free its slot."""
        assert self._outcomes is not None
        if r.timer is not None:
            r.timer.cancel()
        if r.abandoned:
            log.warning("jobd worker: job %s ended after the shutdown released it; outcome dropped", r.job.id)
            return
        self._running.pop(r.job.id, None)
        r.queue.running -= 1
        self._check_idle()
        action, body = self._outcome(r, fut)
        if action:
            r.queue.reporting += 1
            self._outcomes.put(r.job, action, body, r.queue)
        else:
            self.stats.dropped += 1
        r.queue.slot_free.set()

    def _check_idle(self) -> None:
        if not self._running and self._idle is not None:
            self._idle.set()

    def _outcome(self, r: _Run, fut: "asyncio.Future[Any]") -> "tuple[str, Dict[str, Any]]":
        """What to tell the server of a finished handler: ("", …) for
        nothing."""
        jid = r.job.id
        if r.cause == "lease-lost":
            log.warning("jobd worker: lease of job %s lost; outcome dropped", jid)
            return "", {}
        exc: Optional[BaseException] = None
        if fut.cancelled():
            exc = asyncio.CancelledError()
        else:
            exc = fut.exception()
        if exc is None:
            try:
                body = {"result": fut.result()}
                _ops._enc(body)
            except (TypeError, ValueError) as e:
                return "fail", {"error": "encode result: %s" % e, "retryable": False}
            return "complete", body
        if isinstance(exc, Wait) and r.cause is None:
            return "wait", dict(exc.body)
        if r.cause == "timed-out":
            log.warning("jobd worker: job %s passed its deadline; the server ends the attempt", jid)
            return "", {}
        if r.cause == "shutdown":
            return "release", {}
        if isinstance(exc, asyncio.CancelledError):
            reason = "canceled: the job's cancel was requested" if r.cause == "canceled" else "the handler was cancelled"
            return "fail", {"error": reason, "retryable": True}
        if isinstance(exc, _NoHandler):
            return "fail", {"error": str(exc), "retryable": False}
        if not isinstance(exc, Exception):
            return "fail", {"error": describe(exc), "retryable": True}
        log.info("jobd worker: job %s failed: %s", jid, describe(exc), exc_info=exc if log.isEnabledFor(logging.DEBUG) else None)
        return "fail", failure_body(exc)

    def _reported(self, job: ClaimedJob, action: str, state: Optional[str], queue: Any) -> None:
        """The outcome sender's answer for a job (state None: none came)."""
        if isinstance(queue, _Queue):
            queue.reporting -= 1
            queue.slot_free.set()
        if state is None:
            return
        self.stats.states[job.id] = state
        if action == "complete":
            self.stats.succeeded += 1
        elif action == "fail":
            self.stats.failed += 1
        elif action == "wait":
            self.stats.waited += 1
        else:
            self.stats.released += 1

    async def _progress(self, r: _Run, done: int, total: int, phase: str, items: Any) -> None:
        assert self._client is not None
        try:
            cancel = await self._client.call(_ops.progress(r.job.id, r.job.lease_token, done, total, phase, items))
        except JobdError as e:
            self._lost(r, e)
            raise
        if cancel:
            self._stop_run(r, "canceled")

    async def _checkpoint(self, r: _Run, value: Any) -> None:
        assert self._client is not None
        try:
            cancel = await self._client.call(_ops.checkpoint(r.job.id, r.job.lease_token, value))
        except JobdError as e:
            self._lost(r, e)
            raise
        r.job.checkpoint = value
        if cancel:
            self._stop_run(r, "canceled")

    async def _step(self, r: _Run, name: str, value: Any, started_at: str) -> Any:
        assert self._client is not None
        try:
            kept = await self._client.call(_ops.step(r.job.id, r.job.lease_token, name, value, started_at))
        except JobdError as e:
            self._lost(r, e)
            raise
        r.job.steps[name] = kept
        return kept

    async def _spawn(self, r: _Run, children: List[Dict[str, Any]]) -> List[SpawnedChild]:
        assert self._client is not None
        try:
            got: List[SpawnedChild] = await self._client.call(_ops.spawn(r.job.id, r.job.lease_token, children))
        except JobdError as e:
            self._lost(r, e)
            raise
        return got

    def _lost(self, r: _Run, e: JobdError) -> None:
        if isinstance(e, ConflictError):
            self._stop_run(r, "lease-lost")

    # --- heartbeats ---------------------------------------------------

    def _beat_interval(self) -> float:
        d = self.heartbeat_interval
        for r in self._running.values():
            if r.job.lease_ttl:
                d = min(d, r.job.lease_ttl / 3)
            if r.job.heartbeat_interval:
                d = min(d, r.job.heartbeat_interval)
        return max(d, 0.01)

    async def _heartbeats(self) -> None:
        assert self._hb_wake is not None
        last = 0.0
        while True:
            now = time.monotonic()
            due = last + self._beat_interval()
            if now < due:
                self._hb_wake.clear()
                try:
                    await asyncio.wait_for(self._hb_wake.wait(), due - now)
                except asyncio.TimeoutError:
                    pass
                continue
            last = now
            await self._beat()

    async def _beat(self) -> None:
        assert self._client is not None and self._outcomes is not None
        total = sum(q.concurrency for q in self.queues)
        leases = [(r.job.id, r.job.lease_token) for r in self._running.values()]
        reporting = self._outcomes.pending_leases()
        status = "idle" if not leases else ("busy" if len(leases) >= total else "active")
        every = leases + reporting
        states: List[LeaseState] = []
        # The server takes at most MAX_LEASES leases a heartbeat.
        for i in range(0, max(len(every), 1), MAX_LEASES):
            try:
                got: List[LeaseState] = await self._client.call(_ops.heartbeat(status, every[i:i + MAX_LEASES]), retry_503=5.0)
                states.extend(got)
            except JobdError as e:
                log.warning("jobd worker: heartbeat failed: %s", e)
                return
        for s in states:
            if not s.held:
                self._stop_id(s.id, "lease-lost")
            elif s.cancel_requested:
                self._stop_id(s.id, "canceled")

    @property
    def claiming(self) -> bool:
        """Whether the worker claims jobs: from its start until it is asked
        to stop and its pending claims have ended."""
        return any(not c.done() for c in self._claims)

    @property
    def running(self) -> List[str]:
        """The ids of the jobs whose handlers run now."""
        return list(self._running)

    def _running_ids(self) -> Set[str]:
        return set(self._running)


class _NoHandler(Exception):
    pass

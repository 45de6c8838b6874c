"""The asyncio client of jobd's HTTP API: the methods of
:class:`jobd.Client`, awaited."""

from __future__ import annotations

import asyncio
import datetime as _dt
import ssl
import time
from typing import Any, AsyncIterator, Callable, Dict, List, Mapping, Optional, Sequence, TypeVar, Union

from . import _ops
from . import _workflow_ops as _wops
from ._http import AsyncTransport, Endpoint, _within
from ._sse import LONG_POLL, MAX_STREAM_FAILURES, STREAM_IDLE, StreamState, StreamUnavailable
from .client import DEFAULT_RETRY_503, spec_of
from .errors import APIError, MethodNotAllowedError, NotFoundError, TransportError, UnavailableError, error_from_answer, is_retryable
from .models import ClaimedJob, Duration, Event, Job, JobPage, JobSpec, LeaseState, SignalResult, SubmitResult, WorkerCreated
from .workflows import TaskSpec, Workflow, WorkflowBuilder, WorkflowPage, changed

__all__ = ["AsyncClient", "AsyncJobStream"]

T = TypeVar("T")

#: How many single submits :meth:`AsyncClient.submit_many` sends at once
#: while the server has no batch route.
SUBMIT_CONCURRENCY = 16


class AsyncJobStream(AsyncIterator[Job]):
    """The versions of one job from its event stream (see
    :meth:`AsyncClient.stream`): an async iterator, with the stream's
    position."""

    def __init__(self, it: AsyncIterator[Job], state: StreamState) -> None:
        self._it = it
        self._st = state

    def __aiter__(self) -> "AsyncJobStream":
        return self

    async def __anext__(self) -> Job:
        return await self._it.__anext__()

    @property
    def last_event_id(self) -> Optional[str]:
        """The id of the last event received (see
        :attr:`jobd.JobStream.last_event_id`)."""
        return self._st.last_event_id

    @property
    def connections(self) -> int:
        """How many times the stream was (re)connected."""
        return self._st.connections

    async def aclose(self) -> None:
        """Stops following the job (closes the connection)."""
        close = getattr(self._it, "aclose", None)
        if close is not None:
            await close()


class AsyncClient:
    """A client of one jobd server for asyncio programs, with the methods
    and arguments of :class:`jobd.Client`, each a coroutine. Use it from one
    event loop; its connections are kept alive and reused.

    ``async with AsyncClient(url, key) as c: job = await c.submit("kind")``
    """

    def __init__(
        self,
        base_url: str,
        key: Optional[str] = None,
        *,
        timeout: float = 60.0,
        retry_503: float = DEFAULT_RETRY_503,
        ssl_context: Optional[ssl.SSLContext] = None,
        max_idle: int = 128,
    ) -> None:
        self._ep = Endpoint(base_url, key, ssl_context)
        self._t = AsyncTransport(self._ep, timeout, max_idle)
        self.retry_503 = retry_503
        self._batch_route: Optional[bool] = None

    @property
    def base_url(self) -> str:
        return self._ep.base_url

    async def close(self) -> None:
        """Closes the kept-alive connections."""
        await self._t.close()

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def call(self, op: "_ops.Op[T]", retry_503: Optional[float] = None) -> T:
        """Sends an operation, again after a 503 for up to ``retry_503``
        seconds, and reads its answer."""
        budget = self.retry_503 if retry_503 is None else retry_503
        deadline = time.monotonic() + budget
        delay = _ops.RETRY_MIN
        while True:
            resp = await self._t.request(op.req)
            if resp.status < 300:
                return op.decode(resp)
            err = error_from_answer(resp.status, resp.body, resp.retry_after())
            if resp.status != 503 or not isinstance(err, UnavailableError):
                raise err
            wait = _ops.retry_delay(delay, err.retry_after)
            if time.monotonic() + wait > deadline:
                raise err
            await asyncio.sleep(wait)
            delay = _ops.next_delay(delay)

    # --- jobs ---------------------------------------------------------

    async def submit(
        self,
        kind: Union[str, JobSpec, Mapping[str, Any]],
        args: Optional[Mapping[str, Any]] = None,
        *,
        traceparent: Optional[str] = None,
        **options: Any,
    ) -> Job:
        """See :meth:`jobd.Client.submit`."""
        return await self.call(_ops.submit(spec_of(kind, args, **options), traceparent))

    async def submit_many(
        self, jobs: Sequence[Union[JobSpec, Mapping[str, Any]]], *, traceparent: Optional[str] = None
    ) -> List[SubmitResult]:
        """See :meth:`jobd.Client.submit_many`; without the batch route, up
        to ``SUBMIT_CONCURRENCY`` single submits are sent at once."""
        specs = [spec_of(j) for j in jobs]
        if self._batch_route is not False:
            out: List[SubmitResult] = []
            try:
                for chunk in _ops.batches(specs):
                    got: List[SubmitResult] = await self.call(_ops.submit_batch(chunk, traceparent))
                    out.extend(got)
                self._batch_route = True
                return out
            except (NotFoundError, MethodNotAllowedError):
                if self._batch_route or out:
                    raise
                self._batch_route = False
        sem = asyncio.Semaphore(SUBMIT_CONCURRENCY)

        async def one(spec: JobSpec) -> SubmitResult:
            async with sem:
                try:
                    return SubmitResult(job=await self.submit(spec, traceparent=traceparent))
                except APIError as e:
                    return SubmitResult(error=e)

        return list(await asyncio.gather(*(one(s) for s in specs)))

    async def get(self, job_id: str, *, wait: Optional[Duration] = None) -> Job:
        """See :meth:`jobd.Client.get`."""
        return await self.call(_ops.get(job_id, wait))

    async def cancel(self, job_id: str) -> Job:
        """See :meth:`jobd.Client.cancel`."""
        return await self.call(_ops.action(job_id, "cancel"))

    async def signal(self, job_id: str, name: str, payload: Any = None) -> SignalResult:
        """See :meth:`jobd.Client.signal`."""
        return await self.call(_ops.signal(job_id, name, payload))

    async def retry(self, job_id: str) -> Job:
        """See :meth:`jobd.Client.retry`."""
        return await self.call(_ops.action(job_id, "retry"))

    async def rerun(self, job_id: str, args: Optional[Mapping[str, Any]] = None) -> Job:
        """See :meth:`jobd.Client.rerun`."""
        return await self.call(_ops.action(job_id, "rerun", {"args": dict(args)} if args is not None else {}))

    async def events(self, job_id: str) -> List[Event]:
        """See :meth:`jobd.Client.events`."""
        return await self.call(_ops.events(job_id))

    async def list(
        self,
        *,
        queue: Optional[str] = None,
        kind: Optional[str] = None,
        state: _ops.States = None,
        lock_key: Optional[str] = None,
        partition_key: Optional[str] = None,
        updated_since: Optional[_dt.datetime] = None,
        cursor: Optional[str] = None,
        limit: Optional[int] = None,
    ) -> JobPage:
        """See :meth:`jobd.Client.list`."""
        q = _ops.list_query(queue, kind, state, lock_key, partition_key, updated_since, cursor, limit)
        return await self.call(_ops.list_jobs(q))

    async def iterate(self, **filters: Any) -> AsyncIterator[Job]:
        """See :meth:`jobd.Client.iterate`: ``async for job in c.iterate()``."""
        cursor = filters.pop("cursor", None)
        while True:
            page = await self.list(cursor=cursor, **filters)
            for j in page.jobs:
                yield j
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    async def count(self, **filters: Any) -> int:
        """See :meth:`jobd.Client.count`."""
        return await self.call(_ops.count(_ops.list_query(**filters)))

    def stream(self, job_id: str, *, last_event_id: Optional[str] = None) -> "AsyncJobStream":
        """See :meth:`jobd.Client.stream`: ``async for job in c.stream(id)``."""
        st = StreamState(last_event_id)
        return AsyncJobStream(self._follow(job_id, st), st)

    async def _follow(self, job_id: str, st: StreamState) -> AsyncIterator[Job]:
        while not st.done:
            req = _ops.stream_request(job_id, st.last_event_id)
            delay: Optional[float] = None
            try:
                resp = await self._t.stream(req)
                try:
                    err = st.answer(resp.status, resp.headers, await resp.read() if resp.status != 200 else b"")
                    if err is not None:
                        if not (isinstance(err, UnavailableError) and resp.status == 503):
                            raise err
                        st.failures += 1
                        if st.failures >= MAX_STREAM_FAILURES:
                            raise err
                        delay = _ops.retry_delay(st.ended(), err.retry_after)
                    elif st.done:
                        return
                    else:
                        st.begin()
                        lines = resp.lines().__aiter__()
                        while True:
                            try:
                                line = await _within(lines.__anext__(), STREAM_IDLE)
                            except StopAsyncIteration:
                                break
                            except asyncio.TimeoutError as e:
                                raise TransportError("jobd: event stream silent for %ss" % STREAM_IDLE) from e
                            ev = st.parser.feed(line)
                            if ev is not None:
                                j = st.event(ev)
                                if j is not None:
                                    yield j
                                    if st.done:
                                        return
                finally:
                    resp.close()
            except TransportError:
                st.failures += 1
                if st.failures >= MAX_STREAM_FAILURES:
                    raise
            await asyncio.sleep(st.ended() if delay is None else delay)

    async def wait(
        self,
        job_id: str,
        *,
        timeout: Optional[float] = None,
        on_update: Optional[Callable[[Job], None]] = None,
    ) -> Job:
        """See :meth:`jobd.Client.wait`; raises :class:`TimeoutError`
        (``asyncio.TimeoutError``) after ``timeout`` seconds."""

        async def follow() -> Job:
            try:
                async for j in self.stream(job_id):
                    if on_update is not None:
                        on_update(j)
                    if j.final:
                        return j
            except StreamUnavailable:
                last: Optional[Job] = None
                while True:  # no event stream: long-poll
                    j = await self.get(job_id, wait=LONG_POLL if last is not None else None)
                    if on_update is not None and (last is None or j.updated_at != last.updated_at or j.state != last.state):
                        on_update(j)
                    last = j
                    if j.final:
                        return j
            return await self.get(job_id)

        if timeout is None:
            return await follow()
        try:
            job: Job = await _within(follow(), timeout)
            return job
        except asyncio.TimeoutError:
            raise TimeoutError("jobd: job %s is not final after %ss" % (job_id, timeout)) from None

    # --- workflows ------------------------------------------------------

    async def submit_workflow(
        self,
        name: Union[str, WorkflowBuilder],
        tasks: Optional[Sequence[Union[TaskSpec, Mapping[str, Any]]]] = None,
        idempotency_key: Optional[str] = None,
        *,
        traceparent: Optional[str] = None,
    ) -> Workflow:
        """See :meth:`jobd.Client.submit_workflow`."""
        return await self.call(_wops.submit(_wops.submit_body(name, tasks, idempotency_key), traceparent))

    async def get_workflow(self, workflow_id: str) -> Workflow:
        """See :meth:`jobd.Client.get_workflow`."""
        return await self.call(_wops.get(workflow_id))

    async def list_workflows_page(
        self,
        *,
        name: Optional[str] = None,
        state: _ops.States = None,
        cursor: Optional[str] = None,
        limit: Optional[int] = None,
    ) -> WorkflowPage:
        """See :meth:`jobd.Client.list_workflows_page`."""
        return await self.call(_wops.list_page(_wops.list_query(name, state, cursor, limit)))

    async def list_workflows(
        self,
        *,
        name: Optional[str] = None,
        state: _ops.States = None,
        cursor: Optional[str] = None,
        limit: Optional[int] = None,
    ) -> AsyncIterator[Workflow]:
        """See :meth:`jobd.Client.list_workflows`: ``async for w in
        c.list_workflows(name="transcode")``."""
        while True:
            page = await self.list_workflows_page(name=name, state=state, cursor=cursor, limit=limit)
            for w in page.workflows:
                yield w
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    async def cancel_workflow(self, workflow_id: str) -> Workflow:
        """See :meth:`jobd.Client.cancel_workflow`."""
        return await self.call(_wops.action(workflow_id, "cancel"))

    async def retry_workflow(self, workflow_id: str) -> Workflow:
        """See :meth:`jobd.Client.retry_workflow`."""
        return await self.call(_wops.action(workflow_id, "retry"))

    async def wait_workflow(
        self,
        workflow_id: str,
        *,
        timeout: Optional[float] = None,
        on_update: Optional[Callable[[Workflow], None]] = None,
        poll: float = _wops.WORKFLOW_POLL,
    ) -> Workflow:
        """See :meth:`jobd.Client.wait_workflow`; raises
        :class:`TimeoutError` after ``timeout`` seconds."""
        deadline = None if timeout is None else time.monotonic() + timeout
        last: Optional[Workflow] = None
        while True:
            try:
                w = await self.get_workflow(workflow_id)
            except (APIError, TransportError) as e:
                if not is_retryable(e):
                    raise
            else:
                if on_update is not None and changed(last, w):
                    on_update(w)
                last = w
                if w.final:
                    return w
            wait = poll
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError("jobd: workflow %s is not final after %ss" % (workflow_id, timeout))
                wait = min(wait, left)
            await asyncio.sleep(wait)

    # --- queues, workers and keys (admin) ------------------------------

    async def pause_queue(self, name: str) -> Dict[str, Any]:
        """See :meth:`jobd.Client.pause_queue`."""
        return await self.call(_ops.queue_action(name, "pause"))

    async def resume_queue(self, name: str) -> Dict[str, Any]:
        """See :meth:`jobd.Client.resume_queue`."""
        return await self.call(_ops.queue_action(name, "resume"))

    async def create_worker(
        self,
        name: str,
        *,
        capabilities: Optional[Sequence[str]] = None,
        queues: Optional[Sequence[str]] = None,
        metadata: Optional[Mapping[str, Any]] = None,
    ) -> WorkerCreated:
        """See :meth:`jobd.Client.create_worker`."""
        return await self.call(_ops.create_worker(name, capabilities, queues, metadata))

    async def workers(self) -> List[Dict[str, Any]]:
        """See :meth:`jobd.Client.workers`."""
        return await self.call(_ops.list_workers())

    async def disable_worker(self, worker_id: str) -> Dict[str, Any]:
        """See :meth:`jobd.Client.disable_worker`."""
        return await self.call(_ops.worker_action(worker_id, "disable"))

    async def enable_worker(self, worker_id: str) -> Dict[str, Any]:
        """See :meth:`jobd.Client.enable_worker`."""
        return await self.call(_ops.worker_action(worker_id, "enable"))

    async def delete_worker(self, worker_id: str) -> None:
        """See :meth:`jobd.Client.delete_worker`."""
        await self.call(_ops.delete_worker(worker_id))

    async def create_key(self, name: str, scopes: Sequence[str], *, queues: Optional[Sequence[str]] = None) -> Dict[str, Any]:
        """See :meth:`jobd.Client.create_key`."""
        return await self.call(_ops.create_key(name, scopes, queues))

    # --- the worker protocol (a worker's key) --------------------------

    async def heartbeat(self, status: str, leases: Sequence[Sequence[str]]) -> List[LeaseState]:
        """See :meth:`jobd.Client.heartbeat`."""
        return await self.call(_ops.heartbeat(status, [(str(i), str(t)) for i, t in leases]))

    async def claim(self, queues: Sequence[str], *, max_jobs: int = 1, wait: Optional[Duration] = None) -> List[ClaimedJob]:
        """See :meth:`jobd.Client.claim`."""
        return await self.call(_ops.claim(queues, max_jobs, wait))

    async def progress(self, job: ClaimedJob, done: int, total: int, phase: str = "", *, items: Any = None) -> bool:
        """See :meth:`jobd.Client.progress`."""
        return await self.call(_ops.progress(job.id, job.lease_token, done, total, phase, items))

    async def checkpoint(self, job: ClaimedJob, value: Any) -> bool:
        """See :meth:`jobd.Client.checkpoint`."""
        ok = await self.call(_ops.checkpoint(job.id, job.lease_token, value))
        job.checkpoint = value
        return ok

    async def complete(self, job: ClaimedJob, result: Any = None) -> str:
        """See :meth:`jobd.Client.complete`."""
        return await self.call(_ops.finish(job.id, job.lease_token, "complete", _ops.complete_body(result)))

    async def fail(
        self,
        job: ClaimedJob,
        error: str,
        *,
        retryable: bool = True,
        retry_after: Optional[Duration] = None,
        throttle: Optional[Duration] = None,
    ) -> str:
        """See :meth:`jobd.Client.fail`."""
        return await self.call(_ops.finish(job.id, job.lease_token, "fail", _ops.fail_body(error, retryable, retry_after, throttle)))

    async def release(self, job: ClaimedJob) -> str:
        """See :meth:`jobd.Client.release`."""
        return await self.call(_ops.finish(job.id, job.lease_token, "release", {}))

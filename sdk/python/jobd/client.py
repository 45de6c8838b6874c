"""The synchronous client of jobd's HTTP API."""

from __future__ import annotations

import datetime as _dt
import ssl
import time
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, TypeVar, Union

from . import _ops
from . import _workflow_ops as _wops
from ._http import Endpoint, SyncTransport
from ._sse import LONG_POLL, MAX_STREAM_FAILURES, STREAM_IDLE, StreamState, StreamUnavailable
from .errors import APIError, MethodNotAllowedError, NotFoundError, TransportError, UnavailableError, error_from_answer, is_retryable
from .models import ClaimedJob, Duration, Event, Job, JobPage, JobSpec, LeaseState, SignalResult, SubmitResult, WorkerCreated
from .workflows import TaskSpec, Workflow, WorkflowBuilder, WorkflowPage, changed

__all__ = ["Client", "JobStream", "spec_of"]

T = TypeVar("T")

#: How long a request answered 503 is sent again by default, in seconds.
DEFAULT_RETRY_503 = 60.0


def spec_of(kind: Union[str, JobSpec, Mapping[str, Any]], args: Optional[Mapping[str, Any]] = None, **options: Any) -> JobSpec:
    """Returns the :class:`JobSpec` of a submit's arguments: a spec, a dict
    of its members, or a kind with args and options."""
    if isinstance(kind, JobSpec):
        return kind
    if isinstance(kind, Mapping):
        return JobSpec(**dict(kind))
    return JobSpec(kind=kind, args=args, **options)


class JobStream(Iterator[Job]):
    """The versions of one job from its event stream (see
    :meth:`Client.stream`): an iterator, with the stream's position."""

    def __init__(self, it: Iterator[Job], state: StreamState) -> None:
        self._it = it
        self._st = state

    def __iter__(self) -> "JobStream":
        return self

    def __next__(self) -> Job:
        return next(self._it)

    @property
    def last_event_id(self) -> Optional[str]:
        """The id of the last event received: pass it as ``last_event_id``
        to a later stream to resume after it."""
        return self._st.last_event_id

    @property
    def connections(self) -> int:
        """How many times the stream was (re)connected."""
        return self._st.connections

    def close(self) -> None:
        """Stops following the job (closes the connection)."""
        close = getattr(self._it, "close", None)
        if close is not None:
            close()


class Client:
    """A client of one jobd server, safe for use by many threads.

    Args:
        base_url: the server, ``http://host:port`` or ``https://…``.
        key: an API key, a worker's key or the admin secret, sent as a
            bearer credential; ``None`` for a server without credentials.
        timeout: seconds a request may wait for its answer (long-polls and
            event streams add their own wait).
        retry_503: for how many seconds a request answered 503 (the
            server's database does not answer, or it is busy) is sent again
            after the answer's ``Retry-After``; 0 raises the
            :class:`~jobd.errors.UnavailableError` at once.
        ssl_context: for an ``https://`` server with a private CA or a
            client certificate.

    Every method raises :class:`~jobd.errors.APIError` (of the class of
    the answer's problem) or :class:`~jobd.errors.TransportError`.
    """

    def __init__(
        self,
        base_url: str,
        key: Optional[str] = None,
        *,
        timeout: float = 60.0,
        retry_503: float = DEFAULT_RETRY_503,
        ssl_context: Optional[ssl.SSLContext] = None,
        max_idle: int = 32,
    ) -> None:
        self._ep = Endpoint(base_url, key, ssl_context)
        self._t = SyncTransport(self._ep, timeout, max_idle)
        self.retry_503 = retry_503
        # Whether the server has POST /api/v1/jobs/batch: None until known.
        self._batch_route: Optional[bool] = None

    @property
    def base_url(self) -> str:
        return self._ep.base_url

    def close(self) -> None:
        """Closes the kept-alive connections."""
        self._t.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def call(self, op: "_ops.Op[T]", retry_503: Optional[float] = None) -> T:
        """Sends an operation, again after a 503 for up to ``retry_503``
        seconds, and reads its answer."""
        budget = self.retry_503 if retry_503 is None else retry_503
        deadline = time.monotonic() + budget
        delay = _ops.RETRY_MIN
        while True:
            resp = self._t.request(op.req)
            if resp.status < 300:
                return op.decode(resp)
            err = error_from_answer(resp.status, resp.body, resp.retry_after())
            if resp.status != 503 or not isinstance(err, UnavailableError):
                raise err
            wait = _ops.retry_delay(delay, err.retry_after)
            if time.monotonic() + wait > deadline:
                raise err
            time.sleep(wait)
            delay = _ops.next_delay(delay)

    # --- jobs ---------------------------------------------------------

    def submit(
        self,
        kind: Union[str, JobSpec, Mapping[str, Any]],
        args: Optional[Mapping[str, Any]] = None,
        *,
        traceparent: Optional[str] = None,
        **options: Any,
    ) -> Job:
        """Submits a job and returns it; ``job.created`` is ``False`` when
        the server answered with an existing job (idempotency key, or
        ``unique="active"``). ``options`` are the members of
        :class:`~jobd.models.JobSpec` (queue, priority, run_at, max_attempts,
        lease_ttl, lock_key, partition_key, idempotency_key, requires,
        prefers, unique, timeout, callback_url)."""
        return self.call(_ops.submit(spec_of(kind, args, **options), traceparent))

    def submit_many(
        self, jobs: Sequence[Union[JobSpec, Mapping[str, Any]]], *, traceparent: Optional[str] = None
    ) -> List[SubmitResult]:
        """Submits several jobs and returns one answer per job, in order:
        ``SubmitResult.job`` (its ``id`` and ``state``, ``created`` False
        when its idempotency key matched an existing job) or
        ``SubmitResult.error`` (a 409 ``duplicate``).

        With ``POST /api/v1/jobs/batch`` on the server, up to 1 000 jobs (and
        about 900 KiB) go in one request and one transaction: all or
        nothing, a job that breaks a rule refuses its whole chunk, raised as
        the problem of the first refused job (``field`` ``jobs[3].queue``;
        ``problem["items"]`` lists them all), and none of that chunk is
        inserted. A server without the route (404 or 405) is sent one
        request per job: then a refused job's error is in its answer and the
        others are inserted."""
        specs = [spec_of(j) for j in jobs]
        if self._batch_route is not False:
            out: List[SubmitResult] = []
            try:
                for chunk in _ops.batches(specs):
                    got: List[SubmitResult] = self.call(_ops.submit_batch(chunk, traceparent))
                    out.extend(got)
                self._batch_route = True
                return out
            except (NotFoundError, MethodNotAllowedError):
                if self._batch_route or out:
                    raise
                self._batch_route = False
        results = []
        for spec in specs:
            try:
                results.append(SubmitResult(job=self.submit(spec, traceparent=traceparent)))
            except APIError as e:
                results.append(SubmitResult(error=e))
        return results

    def get(self, job_id: str, *, wait: Optional[Duration] = None) -> Job:
        """Returns a job; with ``wait`` (at most 60 s) the server holds the
        answer until the job is final or the wait ends."""
        return self.call(_ops.get(job_id, wait))

    def cancel(self, job_id: str) -> Job:
        """Cancels a job: a queued one at once, a running one when its
        worker next hears of it (``cancel_requested``). A final job raises
        :class:`~jobd.errors.WrongStateError`."""
        return self.call(_ops.action(job_id, "cancel"))

    def signal(self, job_id: str, name: str, payload: Any = None) -> SignalResult:
        """Sends the signal ``name``, with ``payload`` (any JSON), to a job
        (scope ``cancel``: whoever may cancel the job). A job waiting for it
        (:meth:`jobd.Task.wait_for_signal`) is queued again, and reads it in
        :attr:`jobd.Task.signal`; otherwise it is kept for the job's next
        wait of that name (``delivered`` False). A final job raises
        :class:`~jobd.errors.WrongStateError`."""
        return self.call(_ops.signal(job_id, name, payload))

    def retry(self, job_id: str) -> Job:
        """Puts a failed or canceled job back to queued."""
        return self.call(_ops.action(job_id, "retry"))

    def rerun(self, job_id: str, args: Optional[Mapping[str, Any]] = None) -> Job:
        """Runs a finished job again (scope admin), with new args if given."""
        return self.call(_ops.action(job_id, "rerun", {"args": dict(args)} if args is not None else {}))

    def events(self, job_id: str) -> List[Event]:
        """Returns a job's journal, oldest first."""
        return self.call(_ops.events(job_id))

    def list(
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
        """Returns one page of jobs, newest first (with ``updated_since``:
        the change feed, oldest change first); page on with
        ``cursor=page.next_cursor``. ``limit`` is at most 200."""
        q = _ops.list_query(queue, kind, state, lock_key, partition_key, updated_since, cursor, limit)
        return self.call(_ops.list_jobs(q))

    def iterate(self, **filters: Any) -> Iterator[Job]:
        """Yields every job matching the filters of :meth:`list`, page after
        page, following the cursor."""
        cursor = filters.pop("cursor", None)
        while True:
            page = self.list(cursor=cursor, **filters)
            yield from page.jobs
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    def count(self, **filters: Any) -> int:
        """Returns the number of jobs matching the filters of :meth:`list`."""
        q = _ops.list_query(**filters)
        return self.call(_ops.count(q))

    def stream(self, job_id: str, *, last_event_id: Optional[str] = None) -> Iterator[Job]:
        """Yields the job as it is, then again on each change of state or
        progress, until it is final (Server-Sent Events). A stream that
        ends or breaks is followed again with ``Last-Event-ID``, after the
        server's ``retry:`` delay (a 503 after its ``Retry-After``); five
        failures in a row without an event raise the last one."""
        st = StreamState(last_event_id)
        return JobStream(self._follow(job_id, st, None), st)

    def wait(
        self,
        job_id: str,
        *,
        timeout: Optional[float] = None,
        on_update: Optional[Callable[[Job], None]] = None,
    ) -> Job:
        """Blocks until the job is final and returns it, following its event
        stream; ``on_update`` is called with each version on the way.
        Raises :class:`TimeoutError` after ``timeout`` seconds."""
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            for j in self._follow(job_id, StreamState(None), deadline):
                if on_update is not None:
                    on_update(j)
                if j.final:
                    return j
        except StreamUnavailable:
            return self._long_poll(job_id, deadline, on_update)
        except TransportError:
            if deadline is None or time.monotonic() < deadline:
                raise
        raise TimeoutError("jobd: job %s is not final after %ss" % (job_id, timeout))

    def _long_poll(self, job_id: str, deadline: Optional[float], on_update: Optional[Callable[[Job], None]]) -> Job:
        """wait without an event stream: GET ?wait= until the job is final."""
        last: Optional[Job] = None
        while True:
            wait = LONG_POLL if last is not None else 0.0
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError("jobd: job %s is not final in time" % job_id)
                wait = min(wait, left)
            j = self.get(job_id, wait=max(wait, 0.0) or None)
            if on_update is not None and (last is None or j.updated_at != last.updated_at or j.state != last.state):
                on_update(j)
            last = j
            if j.final:
                return j

    def _follow(self, job_id: str, st: StreamState, deadline: Optional[float]) -> Iterator[Job]:
        """The job's versions from its event stream, reconnecting, until it
        is final or the deadline passes (each read bounded by it)."""
        while not st.done:
            req = _ops.stream_request(job_id, st.last_event_id)
            req.timeout = STREAM_IDLE
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                req.timeout = max(0.01, min(STREAM_IDLE, left))
            delay: Optional[float] = None
            try:
                resp = self._t.stream(req)
                try:
                    err = st.answer(resp.status, resp.headers, resp.read() if resp.status != 200 else b"")
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
                        for line in resp.lines():
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
                if st.failures >= MAX_STREAM_FAILURES or (deadline is not None and time.monotonic() >= deadline):
                    raise
            if delay is None:
                delay = st.ended()
            if deadline is not None:
                delay = min(delay, max(0.0, deadline - time.monotonic()))
            time.sleep(delay)

    # --- workflows ------------------------------------------------------

    def submit_workflow(
        self,
        name: Union[str, WorkflowBuilder],
        tasks: Optional[Sequence[Union[TaskSpec, Mapping[str, Any]]]] = None,
        idempotency_key: Optional[str] = None,
        *,
        traceparent: Optional[str] = None,
    ) -> Workflow:
        """Submits a workflow, a :class:`~jobd.WorkflowBuilder` or a name
        and its tasks (:class:`~jobd.TaskSpec` values or dicts of their
        members), every task inserted in one transaction or none, and
        returns its detail; ``workflow.created`` is ``False`` when
        ``idempotency_key`` matched a workflow of the same request. A
        refused workflow raises the problem naming the task's member: a
        cycle is a :class:`~jobd.errors.ValidationError` whose ``field``
        is ``tasks[0].depends_on``; the key with another request an
        :class:`~jobd.errors.IdempotencyMismatchError`."""
        return self.call(_wops.submit(_wops.submit_body(name, tasks, idempotency_key), traceparent))

    def get_workflow(self, workflow_id: str) -> Workflow:
        """Returns a workflow's detail: its counts by state, tasks, edges
        and journal."""
        return self.call(_wops.get(workflow_id))

    def list_workflows_page(
        self,
        *,
        name: Optional[str] = None,
        state: _ops.States = None,
        cursor: Optional[str] = None,
        limit: Optional[int] = None,
    ) -> WorkflowPage:
        """Returns one page of workflows (their rows), newest first; page
        on with ``cursor=page.next_cursor``. ``state`` is one state or
        several; ``limit`` is at most 200 (the server's default 50)."""
        return self.call(_wops.list_page(_wops.list_query(name, state, cursor, limit)))

    def list_workflows(
        self,
        *,
        name: Optional[str] = None,
        state: _ops.States = None,
        cursor: Optional[str] = None,
        limit: Optional[int] = None,
    ) -> Iterator[Workflow]:
        """Yields every workflow matching the filters of
        :meth:`list_workflows_page`, newest first, page after page
        (``limit`` a page), following the cursor."""
        while True:
            page = self.list_workflows_page(name=name, state=state, cursor=cursor, limit=limit)
            yield from page.workflows
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    def cancel_workflow(self, workflow_id: str) -> Workflow:
        """Cancels every task of a workflow that is not final (running
        ones when their workers next hear of it) and returns its row. A
        final workflow raises :class:`~jobd.errors.WrongStateError`."""
        return self.call(_wops.action(workflow_id, "cancel"))

    def retry_workflow(self, workflow_id: str) -> Workflow:
        """Retries every failed or canceled task of a workflow, and the
        tasks canceled because of them (tasks that succeeded do not run
        again), and returns its row, ``running`` again (scope admin). A
        workflow without such a task raises
        :class:`~jobd.errors.WrongStateError`."""
        return self.call(_wops.action(workflow_id, "retry"))

    def wait_workflow(
        self,
        workflow_id: str,
        *,
        timeout: Optional[float] = None,
        on_update: Optional[Callable[[Workflow], None]] = None,
        poll: float = _wops.WORKFLOW_POLL,
    ) -> Workflow:
        """Blocks until the workflow is final and returns its detail,
        reading it every ``poll`` seconds; ``on_update`` is called with
        the first read and each time the workflow's or a task's state
        changes. A failed read that may succeed again
        (:func:`~jobd.is_retryable`) is read again. Raises
        :class:`TimeoutError` after ``timeout`` seconds."""
        deadline = None if timeout is None else time.monotonic() + timeout
        last: Optional[Workflow] = None
        while True:
            try:
                w = self.get_workflow(workflow_id)
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
            time.sleep(wait)

    # --- queues, workers and keys (admin) ------------------------------

    def pause_queue(self, name: str) -> Dict[str, Any]:
        """Pauses a queue: nothing more of it is claimed."""
        return self.call(_ops.queue_action(name, "pause"))

    def resume_queue(self, name: str) -> Dict[str, Any]:
        """Resumes a paused queue."""
        return self.call(_ops.queue_action(name, "resume"))

    def create_worker(
        self,
        name: str,
        *,
        capabilities: Optional[Sequence[str]] = None,
        queues: Optional[Sequence[str]] = None,
        metadata: Optional[Mapping[str, Any]] = None,
    ) -> WorkerCreated:
        """Registers a remote worker (admin); its ``api_key``, of scope
        ``worker``, is shown only this once. ``queues`` limits the queues it
        may claim from (names, or prefixes ``NAME.*``)."""
        return self.call(_ops.create_worker(name, capabilities, queues, metadata))

    def workers(self) -> List[Dict[str, Any]]:
        """Lists the remote workers (admin)."""
        return self.call(_ops.list_workers())

    def disable_worker(self, worker_id: str) -> Dict[str, Any]:
        """Disables a worker: its calls get 403."""
        return self.call(_ops.worker_action(worker_id, "disable"))

    def enable_worker(self, worker_id: str) -> Dict[str, Any]:
        """Enables a disabled worker."""
        return self.call(_ops.worker_action(worker_id, "enable"))

    def delete_worker(self, worker_id: str) -> None:
        """Deletes a worker and revokes its keys."""
        self.call(_ops.delete_worker(worker_id))

    def create_key(self, name: str, scopes: Sequence[str], *, queues: Optional[Sequence[str]] = None) -> Dict[str, Any]:
        """Creates an API key (admin); the answer's ``key`` is shown once."""
        return self.call(_ops.create_key(name, scopes, queues))

    # --- the worker protocol (a worker's key) --------------------------

    def heartbeat(self, status: str, leases: Sequence[Sequence[str]]) -> List[LeaseState]:
        """Keeps the worker online (``active``, ``idle`` or ``busy``) and
        extends the leases ``(job id, lease token)`` it still holds."""
        return self.call(_ops.heartbeat(status, [(str(i), str(t)) for i, t in leases]))

    def claim(self, queues: Sequence[str], *, max_jobs: int = 1, wait: Optional[Duration] = None) -> List[ClaimedJob]:
        """Claims up to ``max_jobs`` jobs of the queues, long-polling up to
        ``wait`` (at most 60 s) for one to come."""
        return self.call(_ops.claim(queues, max_jobs, wait))

    def progress(self, job: ClaimedJob, done: int, total: int, phase: str = "", *, items: Any = None) -> bool:
        """Reports a claimed job's progress; returns whether its cancel was
        requested."""
        return self.call(_ops.progress(job.id, job.lease_token, done, total, phase, items))

    def checkpoint(self, job: ClaimedJob, value: Any) -> bool:
        """Saves a claimed job's checkpoint (kept across retries)."""
        ok = self.call(_ops.checkpoint(job.id, job.lease_token, value))
        job.checkpoint = value
        return ok

    def complete(self, job: ClaimedJob, result: Any = None) -> str:
        """Completes a claimed job with its result; returns its state."""
        return self.call(_ops.finish(job.id, job.lease_token, "complete", _ops.complete_body(result)))

    def fail(
        self,
        job: ClaimedJob,
        error: str,
        *,
        retryable: bool = True,
        retry_after: Optional[Duration] = None,
        throttle: Optional[Duration] = None,
    ) -> str:
        """Fails a claimed job (see :doc:`jobs`: retryable after the queue's
        backoff or ``retry_after``, for good, or throttled); returns its
        state."""
        return self.call(_ops.finish(job.id, job.lease_token, "fail", _ops.fail_body(error, retryable, retry_after, throttle)))

    def release(self, job: ClaimedJob) -> str:
        """Gives a claimed job back unfinished (queued again at once, its
        attempt not counted); returns its state."""
        return self.call(_ops.finish(job.id, job.lease_token, "release", {}))

"""The claimed job a handler gets: :class:`Task` for ``async def``
handlers, :class:`SyncTask` for blocking handlers run in the worker's
thread pool."""

from __future__ import annotations

import asyncio
import datetime as _dt
import inspect
import threading
from typing import Any, Callable, Dict, List, Mapping, NoReturn, Optional, Protocol, Sequence, TypeVar, Union, overload

from .client import spec_of
from .errors import JobdError
from .failures import Cancelled, Wait
from .models import Child, ClaimedJob, Duration, Input, JobSpec, SpawnedChild, format_duration, format_time, seconds
from .workflows import input_result


class _Run(Protocol):
    """What a task reads of the worker's record of its run."""

    job: ClaimedJob
    cause: Optional[str]

    @property
    def stop_event(self) -> threading.Event: ...


class _Worker(Protocol):
    """What a task asks of the worker that runs it (jobd.Worker), so that
    this module need not import the worker's."""

    async def _progress(self, r: Any, done: int, total: int, phase: str, items: Any) -> None: ...

    async def _checkpoint(self, r: Any, value: Any) -> None: ...

    async def _step(self, r: Any, name: str, value: Any, started_at: str) -> Any: ...

    async def _spawn(self, r: Any, children: List[Dict[str, Any]]) -> List[SpawnedChild]: ...

__all__ = ["Task", "SyncTask", "ChildError", "MAX_SIGNAL_TIMEOUT"]

#: The longest timeout of a signal wait the server accepts, in seconds
#: (366 days).
MAX_SIGNAL_TIMEOUT = 366 * 24 * 3600.0

#: A child for spawn: a :class:`~jobd.Child`, or a dict of its key and
#: the members of a :class:`~jobd.JobSpec`.
ChildLike = Union[Child, Mapping[str, Any]]

T = TypeVar("T")


class _BaseTask:
    def __init__(self, worker: _Worker, run: _Run) -> None:
        self._worker = worker
        self._run = run
        #: The job as claimed: attempt, deadline, lease token, rerun…
        self.job: ClaimedJob = run.job

    @property
    def id(self) -> str:
        """The job's id."""
        return self.job.id

    @property
    def kind(self) -> str:
        """The job's kind."""
        return self.job.kind

    @property
    def queue(self) -> str:
        """The job's queue."""
        return self.job.queue

    @property
    def args(self) -> Any:
        """The job's args (a dict)."""
        return self.job.args

    @property
    def attempt(self) -> int:
        """This attempt's number, from 1."""
        return self.job.attempt

    @property
    def checkpoint(self) -> Any:
        """The last checkpoint saved, by this attempt or an earlier one;
        ``None`` on a first attempt."""
        return self.job.checkpoint

    @property
    def inputs(self) -> Dict[str, Input]:
        """A workflow task's dependencies' ends, by ref (state, result,
        error); empty for a job without dependencies. A task that runs on
        success sees only succeeded dependencies; one that runs on
        ``"any"`` sees failed and canceled ones too."""
        return self.job.inputs

    @overload
    def input(self, ref: str) -> Any: ...

    @overload
    def input(self, ref: str, into: Callable[[Any], T]) -> T: ...

    def input(self, ref: str, into: Optional[Callable[[Any], Any]] = None) -> Any:
        """Returns the result of the dependency ``ref`` (any JSON), passed
        through ``into`` when given (``task.input("download", File.from_json)``).
        Raises :class:`jobd.InputError` when the task has no such
        dependency, or when it did not succeed (its ``state`` and
        ``error``: a task that runs on ``"any"`` reads those in
        :attr:`inputs`)."""
        v = input_result(self.job.id, self.job.inputs, ref)
        return into(v) if into is not None else v

    @property
    def steps(self) -> Any:
        """The steps the job completed, by this attempt or an earlier one:
        name → result (see :meth:`Task.step`)."""
        return self.job.steps

    @property
    def children(self) -> Any:
        """The job's children, as its resumed claim carries them: key →
        ``{"id", "state", "result", "error"}``."""
        return self.job.children

    @property
    def signal(self) -> Any:
        """The signal of the job's last signal wait (``{"name",
        "payload", "timed_out"}``); ``None`` for none."""
        return self.job.signal

    @overload
    def child(self, key: str) -> Any: ...

    @overload
    def child(self, key: str, into: Callable[[Any], T]) -> T: ...

    def child(self, key: str, into: Optional[Callable[[Any], Any]] = None) -> Any:
        """Returns the result of the child ``key`` (any JSON), passed
        through ``into`` when given, on the claim that resumes the job
        after :meth:`wait_for_children`. Raises :class:`ChildError` when
        the job has no such child, or when it did not succeed (its
        ``state`` and ``error``)."""
        c = self.job.children.get(key)
        if not isinstance(c, Mapping):
            raise ChildError("jobd: job %s has no child %r" % (self.job.id, key), key)
        state, error = str(c.get("state") or ""), str(c.get("error") or "")
        if state != "succeeded":
            msg = "jobd: child %r is %s" % (key, state or "not final")
            raise ChildError(msg + (": " + error if error else ""), key, state, error)
        v = c.get("result")
        return into(v) if into is not None else v

    def wait_for_children(self) -> NoReturn:
        """Ends the attempt until every child the job spawned is final
        (:class:`jobd.Wait`): the worker frees the slot, and the job is
        claimed again, the same attempt, with :attr:`children`. When every
        child is final already, it is queued again at once."""
        raise Wait({"for": "children"})

    def wait_for_signal(self, name: str, timeout: Optional[Duration] = None) -> NoReturn:
        """Ends the attempt until the signal ``name`` is sent to the job
        (:meth:`jobd.Client.signal`), or ``timeout`` (seconds or a
        timedelta; ``None``: none) passes. The claim that resumes the job
        carries :attr:`signal`: ``{"name", "payload"}``, or ``{"name",
        "timed_out": True}`` after the timeout. A signal sent before the
        wait was kept: the job is queued again at once."""
        if not isinstance(name, str) or not name:
            raise ValueError("jobd: wait_for_signal needs a signal name")
        body: Dict[str, Any] = {"for": "signal", "signal": name}
        if timeout is not None:
            t = seconds(timeout)
            if not 0 < t <= MAX_SIGNAL_TIMEOUT:
                raise ValueError("jobd: a signal wait's timeout must be over 0 and at most 366 days (None: no timeout), got %r" % (timeout,))
            body["timeout"] = format_duration(t)
        raise Wait(body)

    def sleep_until(self, when: _dt.datetime) -> NoReturn:
        """Ends the attempt until ``when`` (a naive datetime is UTC): the
        job is queued again then, holding no slot meanwhile."""
        if not isinstance(when, _dt.datetime):
            raise TypeError("jobd: sleep_until takes a datetime, got %r" % (when,))
        raise Wait({"until": format_time(when)})

    @property
    def stop_reason(self) -> Optional[str]:
        """Why the job is to stop: ``"canceled"`` (its cancel was
        requested), ``"lease-lost"``, ``"timed-out"`` (its deadline passed)
        or ``"shutdown"``; ``None`` while it may go on."""
        return self._run.cause

    @property
    def cancel_requested(self) -> bool:
        """Whether the job's cancel was requested."""
        return self._run.cause == "canceled"


class Task(_BaseTask):
    """A claimed job handed to an ``async def`` handler.

    When the job is to stop (its cancel requested, its lease lost, its
    deadline passed, the worker shutting down past its timeout) the
    handler's coroutine is cancelled: ``asyncio.CancelledError`` is raised
    at its next ``await``, and :attr:`stop_reason` says why.
    """

    async def progress(self, done: int, total: int, phase: str = "", *, items: Any = None) -> None:
        """Reports progress (``done`` of ``total`` in ``phase``, with
        per-item detail ``items``, any JSON) and extends the lease. When the
        answer says the job's cancel was requested, the handler is
        cancelled."""
        await self._worker._progress(self._run, done, total, phase, items)

    async def save_checkpoint(self, value: Any) -> None:
        """Stores ``value`` (JSON) as the job's checkpoint: a later attempt
        finds it in :attr:`checkpoint`."""
        await self._worker._checkpoint(self._run, value)

    async def step(self, name: str, fn: Callable[[], Any]) -> Any:
        """Runs the step ``name``: when an earlier run of it recorded a
        result (this attempt, or an earlier attempt of the job), returns
        that result without calling ``fn``; otherwise calls ``fn`` (a
        function, or a coroutine function), records what it returns (JSON)
        and returns it. An exception of ``fn`` records nothing: the step
        runs again on the next attempt. A step must be idempotent up to
        the point it records (see docs/steps-and-children.md)."""
        if name in self.job.steps:
            return self.job.steps[name]
        started = _now()
        value = fn()
        if inspect.isawaitable(value):
            value = await value
        return await self._worker._step(self._run, name, value, started)

    @overload
    async def spawn(self, key: str, kind: Union[str, JobSpec, Mapping[str, Any]],
                    args: Optional[Mapping[str, Any]] = None, **options: Any) -> SpawnedChild: ...

    @overload
    async def spawn(self, key: Sequence[ChildLike]) -> List[SpawnedChild]: ...

    async def spawn(self, key: Union[str, Sequence[ChildLike]], kind: Union[str, JobSpec, Mapping[str, Any], None] = None,
                    args: Optional[Mapping[str, Any]] = None, **options: Any) -> Any:
        """Spawns a child of the job: ``spawn(key, kind, args, **options)``
        (``options``: the members of :class:`~jobd.JobSpec`) returns its
        :class:`~jobd.SpawnedChild`; ``spawn([children])`` (each a
        :class:`~jobd.Child` or a dict of ``key`` and a submission's
        members) spawns them in one transaction, all or none, and returns
        one answer each, in order. Spawning is idempotent per key: an
        attempt that spawns a key spawned before gets that child
        (``created`` False). Then :meth:`wait_for_children`."""
        wire, single = _children(key, kind, args, options)
        got = await self._worker._spawn(self._run, wire)
        return got[0] if single else got


class SyncTask(_BaseTask):
    """A claimed job handed to a blocking handler, which runs in the
    worker's thread pool. A thread cannot be interrupted: when the job is
    to stop, :attr:`cancelled` becomes true (and :attr:`stop_event` is
    set); check it between steps, or call :meth:`raise_if_cancelled`."""

    def __init__(self, worker: _Worker, run: _Run, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(worker, run)
        self._loop = loop
        #: Set when the job is to stop; wait on it instead of sleeping.
        self.stop_event: threading.Event = run.stop_event

    @property
    def cancelled(self) -> bool:
        """Whether the job is to stop (see :attr:`stop_reason`)."""
        return self.stop_event.is_set()

    def raise_if_cancelled(self) -> None:
        """Raises :class:`jobd.Cancelled` when the job is to stop."""
        if self.stop_event.is_set():
            raise Cancelled(self._run.cause or "stopped")

    def progress(self, done: int, total: int, phase: str = "", *, items: Any = None) -> None:
        """Reports progress and extends the lease (see
        :meth:`Task.progress`); when the answer says the job's cancel was
        requested, :attr:`cancelled` becomes true."""
        fut = asyncio.run_coroutine_threadsafe(self._worker._progress(self._run, done, total, phase, items), self._loop)
        fut.result()

    def save_checkpoint(self, value: Any) -> None:
        """Stores ``value`` (JSON) as the job's checkpoint."""
        fut = asyncio.run_coroutine_threadsafe(self._worker._checkpoint(self._run, value), self._loop)
        fut.result()

    def step(self, name: str, fn: Callable[[], Any]) -> Any:
        """Runs the step ``name`` in this thread, as :meth:`Task.step`
        does: a recorded result is returned without calling ``fn``."""
        if name in self.job.steps:
            return self.job.steps[name]
        started = _now()
        value = fn()
        fut = asyncio.run_coroutine_threadsafe(self._worker._step(self._run, name, value, started), self._loop)
        return fut.result()

    @overload
    def spawn(self, key: str, kind: Union[str, JobSpec, Mapping[str, Any]],
              args: Optional[Mapping[str, Any]] = None, **options: Any) -> SpawnedChild: ...

    @overload
    def spawn(self, key: Sequence[ChildLike]) -> List[SpawnedChild]: ...

    def spawn(self, key: Union[str, Sequence[ChildLike]], kind: Union[str, JobSpec, Mapping[str, Any], None] = None,
              args: Optional[Mapping[str, Any]] = None, **options: Any) -> Any:
        """Spawns children from this thread, as :meth:`Task.spawn` does."""
        wire, single = _children(key, kind, args, options)
        got = asyncio.run_coroutine_threadsafe(self._worker._spawn(self._run, wire), self._loop).result()
        return got[0] if single else got


class ChildError(JobdError):
    """A resumed job's child could not be read (:meth:`Task.child`): the
    job has no child ``key``, or it did not succeed (``state`` and
    ``error`` say how it ended)."""

    def __init__(self, msg: str, key: str, state: str = "", error: str = "") -> None:
        super().__init__(msg)
        self.key = key
        self.state = state
        self.error = error


def _children(key: Union[str, Sequence[ChildLike]], kind: Union[str, JobSpec, Mapping[str, Any], None],
              args: Optional[Mapping[str, Any]], options: Mapping[str, Any]) -> "tuple[List[Dict[str, Any]], bool]":
    """The wire form of spawn's arguments, and whether it spawns one child
    (answered as one)."""
    if isinstance(key, str):
        if kind is None:
            raise TypeError("jobd: spawn(key, kind, args, **options) needs a kind")
        return [Child(key, spec_of(kind, args, **options)).to_json()], True
    if kind is not None or args is not None or options:
        raise TypeError("jobd: spawn(children) takes the children alone")
    out: List[Dict[str, Any]] = []
    for c in key:
        if isinstance(c, Child):
            out.append(c.to_json())
        elif isinstance(c, Mapping):
            d = dict(c)
            k = d.pop("key", None)
            if not isinstance(k, str):
                raise TypeError("jobd: a child needs a key: %r" % (c,))
            out.append(Child(k, spec_of(d)).to_json())
        else:
            raise TypeError("jobd: a child is a jobd.Child or a dict, got %r" % (c,))
    if not out:
        raise ValueError("jobd: spawn needs at least one child")
    return out, False


def _now() -> str:
    """The time now, RFC 3339, UTC."""
    return _dt.datetime.now(_dt.timezone.utc).isoformat().replace("+00:00", "Z")

"""The claimed job a handler gets: :class:`Task` for ``async def``
handlers, :class:`SyncTask` for blocking handlers run in the worker's
thread pool."""

from __future__ import annotations

import asyncio
import datetime as _dt
import inspect
import threading
from typing import TYPE_CHECKING, Any, Callable, Dict, Optional, TypeVar, overload

from .failures import Cancelled
from .models import ClaimedJob, Input
from .workflows import input_result

if TYPE_CHECKING:  # pragma: no cover
    from .worker import Worker, _Run

__all__ = ["Task", "SyncTask"]

T = TypeVar("T")


class _BaseTask:
    def __init__(self, worker: "Worker", run: "_Run") -> None:
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
        return self.job.kind

    @property
    def queue(self) -> str:
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


class SyncTask(_BaseTask):
    """A claimed job handed to a blocking handler, which runs in the
    worker's thread pool. A thread cannot be interrupted: when the job is
    to stop, :attr:`cancelled` becomes true (and :attr:`stop_event` is
    set); check it between steps, or call :meth:`raise_if_cancelled`."""

    def __init__(self, worker: "Worker", run: "_Run", loop: asyncio.AbstractEventLoop) -> None:
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


def _now() -> str:
    """The time now, RFC 3339, UTC."""
    return _dt.datetime.now(_dt.timezone.utc).isoformat().replace("+00:00", "Z")

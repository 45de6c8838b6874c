"""Handlers registered by kind, and the queue configuration of a worker."""

from __future__ import annotations

import asyncio
import functools
import inspect
import json
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Dict, List, Mapping, Optional, Sequence, TypeVar, Union

__all__ = ["Handler", "Handlers", "QueueConfig", "parse_queues", "handler", "default_handlers"]

F = TypeVar("F", bound=Callable[..., Any])


@dataclass
class Handler:
    """A registered handler: ``threaded`` ones are blocking functions run
    in the worker's thread pool, given a :class:`jobd.SyncTask`; the others
    are coroutine functions given a :class:`jobd.Task`."""

    kind: str
    fn: Callable[[Any], Any]
    threaded: bool


class Handlers:
    """Handlers by job kind. ``kind="*"`` handles every kind without a
    handler of its own.

    ::

        handlers = Handlers()

        @handlers.handler("resize")
        async def resize(task: jobd.Task) -> dict: ...

        @handlers.handler("transcode")        # a plain def: run in a thread
        def transcode(task: jobd.SyncTask) -> dict: ...
    """

    def __init__(self) -> None:
        self._by_kind: Dict[str, Handler] = {}

    def handler(self, kind: str, *, threaded: Optional[bool] = None) -> Callable[[F], F]:
        """A decorator registering a handler of ``kind``. ``threaded``
        defaults to whether the function is not a coroutine function."""

        def register(fn: F) -> F:
            self.add(kind, fn, threaded=threaded)
            return fn

        return register

    def add(self, kind: str, fn: Callable[[Any], Any], *, threaded: Optional[bool] = None) -> None:
        """Registers ``fn`` for ``kind`` (see :meth:`handler`)."""
        if not kind:
            raise ValueError("jobd: a handler needs a kind (\"*\" for every other kind)")
        is_async = asyncio.iscoroutinefunction(fn) or (
            isinstance(fn, functools.partial) and asyncio.iscoroutinefunction(fn.func)
        ) or inspect.iscoroutinefunction(getattr(fn, "__call__", None))
        if threaded is None:
            threaded = not is_async
        if not threaded and not is_async:
            raise TypeError("jobd: handler of %r: not a coroutine function; register it threaded" % kind)
        self._by_kind[kind] = Handler(kind, fn, threaded)

    def update(self, other: "Handlers") -> None:
        """Adds the handlers of ``other``."""
        self._by_kind.update(other._by_kind)

    def get(self, kind: str) -> Optional[Handler]:
        """The handler of ``kind``, else the ``"*"`` one, else ``None``."""
        return self._by_kind.get(kind) or self._by_kind.get("*")

    @property
    def threaded(self) -> bool:
        """Whether any handler is threaded."""
        return any(h.threaded for h in self._by_kind.values())

    def kinds(self) -> List[str]:
        return sorted(self._by_kind)


#: The handlers registered with :func:`handler`, which ``python -m jobd
#: worker`` runs when the module it imports defines no :class:`Handlers`.
default_handlers = Handlers()


def handler(kind: str, *, threaded: Optional[bool] = None) -> Callable[[F], F]:
    """Registers a handler of ``kind`` in :data:`default_handlers`."""
    return default_handlers.handler(kind, threaded=threaded)


@dataclass
class QueueConfig:
    """A queue a worker claims from and how many of its jobs run at once."""

    queue: str
    concurrency: int = 1


QueuesSpec = Union[str, Sequence[Union[str, Mapping[str, Any], QueueConfig]]]


def parse_queues(spec: QueuesSpec, concurrency: int = 1) -> List[QueueConfig]:
    """Reads a worker's queues: a JSON text or a list of the ETL loader's
    form (``[{"queue": "load.cbr", "concurrency": 2}]``), of
    :class:`QueueConfig`, or of queue names (each with ``concurrency``)."""
    items: Any = json.loads(spec) if isinstance(spec, str) else spec
    if not isinstance(items, (list, tuple)) or not items:
        raise ValueError("jobd: queues: want a non-empty list")
    out: List[QueueConfig] = []
    for it in items:
        if isinstance(it, QueueConfig):
            q = it
        elif isinstance(it, str):
            q = QueueConfig(it, concurrency)
        elif isinstance(it, Mapping):
            unknown = set(it) - {"queue", "concurrency"}
            if unknown:
                raise ValueError("jobd: queues: unknown member %s" % ", ".join(sorted(unknown)))
            q = QueueConfig(str(it.get("queue", "")), int(it.get("concurrency", concurrency)))
        else:
            raise ValueError("jobd: queues: %r is not a queue" % (it,))
        if not q.queue:
            raise ValueError("jobd: queues: a queue without a name")
        if q.concurrency < 1:
            raise ValueError("jobd: queues: %s: concurrency must be at least 1" % q.queue)
        if any(o.queue == q.queue for o in out):
            raise ValueError("jobd: queues: %s listed twice" % q.queue)
        out.append(q)
    return out


AsyncHandler = Callable[[Any], Awaitable[Any]]

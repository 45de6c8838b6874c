"""How a handler says how its job failed.

Any exception a handler raises fails its job retryably: with attempts left
it is queued again after its queue's backoff (the server's). Raise one of
these, or one with one of these as its ``__cause__`` (``raise
Permanent("…") from err``), to choose otherwise:

- :class:`Permanent`: the job fails for good, whatever attempts are left.
- :class:`RetryAfter`: with attempts left, the job waits ``delay`` seconds
  before its next attempt instead of its queue's backoff.
- :class:`Throttle`: the service the job calls is overloaded (it answered
  429, say): the job is queued again after ``delay``, its attempt not
  counted, and no job of its queue (or of its partition, when the queue's
  ``throttle_by`` is ``partition_key``) starts on any node or worker
  before then. Throttle wins over Permanent and RetryAfter around or
  inside it, as in the Go SDK.

A job whose cancel was requested ends ``canceled`` whatever its handler
raises.

:class:`Wait` is not a failure: :meth:`jobd.Task.wait_for_children`,
:meth:`~jobd.Task.wait_for_signal` and :meth:`~jobd.Task.sleep_until`
raise it to end the attempt waiting (docs/steps-and-children.md). A
handler that catches ``Exception`` must let it through (``except
jobd.Wait: raise``).
"""

from __future__ import annotations

from typing import Any, Dict, Optional

from .models import Duration, seconds

__all__ = ["Permanent", "RetryAfter", "Throttle", "Cancelled", "Wait", "MAX_THROTTLE", "failure_body"]

#: The longest throttle the server accepts, in seconds (24 h).
MAX_THROTTLE = 24 * 3600.0


class Permanent(Exception):
    """Fails the job for good instead of retrying it."""


class RetryAfter(Exception):
    """Fails the job retryably; with attempts left it waits ``delay``
    seconds (or a timedelta) before its next attempt."""

    def __init__(self, delay: Duration, message: str = "retry requested") -> None:
        super().__init__(message)
        self.delay = max(seconds(delay), 0.0)


class Throttle(Exception):
    """The downstream is overloaded: the job is queued again after
    ``delay`` (at least 1 ms, at most 24 h), its attempt not counted, and
    its queue or partition waits as long."""

    def __init__(self, delay: Duration, message: str = "throttled by the downstream") -> None:
        super().__init__(message)
        self.delay = min(max(seconds(delay), 0.001), MAX_THROTTLE)


class Cancelled(Exception):
    """Raised by :meth:`jobd.SyncTask.raise_if_cancelled` in a threaded
    handler once the job is to stop (its cancel was requested, its lease
    was lost, its deadline passed or the worker is shutting down)."""

    def __init__(self, reason: str) -> None:
        super().__init__("jobd: job stopped: " + reason)
        self.reason = reason


class Wait(Exception):
    """Ends the attempt waiting instead of with an outcome: the worker
    sends ``POST /api/v1/worker/jobs/{id}/wait`` with :attr:`body` and
    frees the handler's slot; the job is claimed again, as the same job
    under the same attempt, once what it waits for came. Raised by the
    task's waits (:meth:`jobd.Task.wait_for_children`, …), not built by
    hand."""

    def __init__(self, body: Dict[str, Any]) -> None:
        super().__init__("jobd: the attempt ends waiting: %s" % (body,))
        #: The wait's request body, less the lease token.
        self.body = body


def _chain(exc: BaseException) -> Any:
    seen = set()
    e: Optional[BaseException] = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        yield e
        e = e.__cause__


def describe(exc: BaseException) -> str:
    """The error text of a failure: the message of jobd's own failures,
    ``Type: message`` of any other exception."""
    if isinstance(exc, (Permanent, RetryAfter, Throttle)):
        msg = str(exc)
        cause = exc.__cause__
        if cause is not None:
            msg += ": " + describe(cause)
        return msg
    text = str(exc)
    return "%s: %s" % (type(exc).__name__, text) if text else type(exc).__name__


def failure_body(exc: BaseException) -> Dict[str, Any]:
    """The ``fail`` call's members for a handler's exception."""
    chain = list(_chain(exc))
    msg = describe(exc)
    for e in chain:
        if isinstance(e, Throttle):
            return {"error": msg, "retryable": True, "throttle": e.delay}
    for e in chain:
        if isinstance(e, Permanent):
            return {"error": msg, "retryable": False}
    for e in chain:
        if isinstance(e, RetryAfter):
            return {"error": msg, "retryable": True, "retry_after": e.delay}
    return {"error": msg, "retryable": True}

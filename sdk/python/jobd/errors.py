"""Errors of the jobd SDK.

Every error the SDK raises is a :class:`JobdError`. An error answer of the
server (an RFC 9457 problem document) is an :class:`APIError` of the class
its problem ``type`` names, read from one table, :data:`PROBLEM_KINDS`, which
mirrors ``components.x-problem-kinds`` of the server's ``/openapi.json``
(the tests hold the two equal). Catch by class of problem
(:class:`InvalidRequestError`, :class:`ConflictError`,
:class:`UnavailableError`…) or by kind (:class:`LeaseLostError`,
:class:`IdempotencyMismatchError`…). A request that got no answer at all
is a :class:`TransportError`.

:func:`is_retryable` says whether sending the same request again later can
help, as the Go SDK's ``client.IsRetryable`` does.
"""

from __future__ import annotations

import json
from typing import Any, Dict, Mapping, Optional, Type

__all__ = [
    "JobdError",
    "TransportError",
    "APIError",
    "InvalidRequestError",
    "BadRequestError",
    "ValidationError",
    "TooLargeError",
    "MethodNotAllowedError",
    "UnsupportedMediaTypeError",
    "IdempotencyMismatchError",
    "UnauthorizedError",
    "ForbiddenError",
    "NotFoundError",
    "ConflictError",
    "WrongStateError",
    "DuplicateError",
    "LeaseLostError",
    "CanceledError",
    "UnavailableError",
    "ServiceUnavailableError",
    "BusyError",
    "TooManyRequestsError",
    "UpstreamError",
    "UpstreamFailedError",
    "ProcessorFailedError",
    "UpstreamTimeoutError",
    "PendingError",
    "TaskTimeoutError",
    "InternalError",
    "PROBLEM_BASE",
    "PROBLEM_KINDS",
    "error_from_answer",
    "is_retryable",
]

#: The prefix of every problem ``type`` jobd answers with.
PROBLEM_BASE = "https://jobd.dev/problems/"


class JobdError(Exception):
    """The base of every error the SDK raises."""


class TransportError(JobdError):
    """The request got no answer: the connection was refused, broke or
    timed out. A request that is not idempotent may have been carried out."""


class APIError(JobdError):
    """An error answer of the server, with its problem document.

    Attributes:
        status: the HTTP status of the answer.
        type: the problem's ``type`` URI (``https://jobd.dev/problems/…``);
            empty when the body was not a problem document (a proxy's page).
        kind: the last segment of ``type`` (``"lease-lost"``), or ``""``.
        title, detail: the problem's text.
        field: the request field at fault, or ``""``.
        retry_after: the answer's ``Retry-After`` in seconds, or ``None``.
        problem: the whole problem document as a dict.
    """

    #: The class of problem (``components.x-problem-kinds``): invalid,
    #: unauthorized, forbidden, not-found, conflict, unavailable, upstream,
    #: pending or internal.
    problem_class = ""
    #: The problem kind this class stands for (``"lease-lost"``); ``""`` for
    #: the classes of several kinds.
    problem_kind = ""
    #: The HTTP status the server answers this kind with (0: several).
    problem_status = 0

    def __init__(
        self,
        status: int,
        problem: Optional[Mapping[str, Any]] = None,
        retry_after: Optional[float] = None,
    ) -> None:
        doc: Dict[str, Any] = dict(problem or {})
        self.status = status
        self.type: str = str(doc.get("type", ""))
        self.kind = self.type[len(PROBLEM_BASE):] if self.type.startswith(PROBLEM_BASE) else ""
        self.title: str = str(doc.get("title", ""))
        self.detail: str = str(doc.get("detail", ""))
        self.field: str = str(doc.get("field", ""))
        self.retry_after = retry_after
        self.problem = doc
        msg = "jobd: %d %s" % (status, self.detail or self.title)
        if self.field and self.field not in self.detail:
            msg += " (field %s)" % self.field
        super().__init__(msg)


class InvalidRequestError(APIError):
    """The request was refused as malformed or breaking a rule; ``field``
    names the field. Fix the request."""

    problem_class = "invalid"


class UnauthorizedError(APIError):
    """Missing, malformed, unknown or revoked credential (401)."""

    problem_class = "unauthorized"
    problem_kind = "unauthorized"
    problem_status = 401


class ForbiddenError(APIError):
    """The credential lacks the route's scope, or the worker is disabled
    (403)."""

    problem_class = "forbidden"
    problem_kind = "forbidden"
    problem_status = 403


class NotFoundError(APIError):
    """No such job, worker, key or route (404)."""

    problem_class = "not-found"
    problem_kind = "not-found"
    problem_status = 404


class ConflictError(APIError):
    """The state of the job or lease does not allow the operation."""

    problem_class = "conflict"


class UnavailableError(APIError):
    """Retry later, after ``retry_after``: the server's database does not
    answer, it is busy, or a cap was reached. The clients send a request
    answered 503 again by themselves (see ``retry_503``)."""

    problem_class = "unavailable"


class UpstreamError(APIError):
    """A service jobd called for the request failed; not transient."""

    problem_class = "upstream"


class PendingError(APIError):
    """The work goes on; read its outcome later."""

    problem_class = "pending"


class InternalError(APIError):
    """The server failed (500); the cause is in its log."""

    problem_class = "internal"
    problem_kind = "internal"
    problem_status = 500



class BadRequestError(InvalidRequestError):
    """400 ``bad-request``: the request could not be read (bad JSON, a bad
    id, a value of the wrong type)."""

    problem_kind = "bad-request"
    problem_status = 400


class ValidationError(InvalidRequestError):
    """422 ``validation``: a value breaks a rule; ``field`` names it."""

    problem_kind = "validation"
    problem_status = 422


class TooLargeError(InvalidRequestError):
    """413 ``too-large``: the request body is over the server's limit."""

    problem_kind = "too-large"
    problem_status = 413


class MethodNotAllowedError(InvalidRequestError):
    """405 ``method-not-allowed``."""

    problem_kind = "method-not-allowed"
    problem_status = 405


class UnsupportedMediaTypeError(InvalidRequestError):
    """415 ``unsupported-media-type``: a body without
    ``Content-Type: application/json``."""

    problem_kind = "unsupported-media-type"
    problem_status = 415


class IdempotencyMismatchError(InvalidRequestError):
    """422 ``idempotency-mismatch``: the idempotency key was used before
    with another request; nothing was written."""

    problem_kind = "idempotency-mismatch"
    problem_status = 422


class WrongStateError(ConflictError):
    """409 ``wrong-state``: the job's state does not allow it (cancel of a
    finished job, retry of a running one)."""

    problem_kind = "wrong-state"
    problem_status = 409


class DuplicateError(ConflictError):
    """409 ``duplicate``: an active twin of a ``unique`` job exists."""

    problem_kind = "duplicate"
    problem_status = 409


class LeaseLostError(ConflictError):
    """409 ``lease-lost``: the worker's lease token is no longer the job's
    current one; nothing was written."""

    problem_kind = "lease-lost"
    problem_status = 409


class CanceledError(ConflictError):
    """410 ``canceled``: an async request was canceled."""

    problem_kind = "canceled"
    problem_status = 410


class ServiceUnavailableError(UnavailableError):
    """503 ``unavailable``: the server's database does not answer."""

    problem_kind = "unavailable"
    problem_status = 503


class BusyError(UnavailableError):
    """503 ``busy``: too many pending requests (back-pressure)."""

    problem_kind = "busy"
    problem_status = 503


class TooManyRequestsError(UnavailableError):
    """429 ``too-many-requests``: a cap (open event streams) was reached."""

    problem_kind = "too-many-requests"
    problem_status = 429


class UpstreamFailedError(UpstreamError):
    """502 ``upstream-failed``: the async gateway's upstream failed."""

    problem_kind = "upstream-failed"
    problem_status = 502


class ProcessorFailedError(UpstreamError):
    """502 ``processor-failed``: a durable process's processor failed."""

    problem_kind = "processor-failed"
    problem_status = 502


class UpstreamTimeoutError(UpstreamError):
    """504 ``upstream-timeout``: the upstream did not answer in time."""

    problem_kind = "upstream-timeout"
    problem_status = 504


class TaskTimeoutError(PendingError):
    """504 ``task-timeout``: a process task was still pending when the
    call's timeout passed; it is not lost."""

    problem_kind = "task-timeout"
    problem_status = 504


#: The exception class of each problem kind (the last segment of its
#: ``type``), as ``components.x-problem-kinds`` of ``/openapi.json`` lists
#: them.
PROBLEM_KINDS: Dict[str, Type[APIError]] = {
    c.problem_kind: c
    for c in (
        BadRequestError,
        ValidationError,
        TooLargeError,
        UnauthorizedError,
        ForbiddenError,
        NotFoundError,
        MethodNotAllowedError,
        WrongStateError,
        DuplicateError,
        LeaseLostError,
        CanceledError,
        InternalError,
        UpstreamFailedError,
        ProcessorFailedError,
        ServiceUnavailableError,
        BusyError,
        UpstreamTimeoutError,
        TaskTimeoutError,
        IdempotencyMismatchError,
        TooManyRequestsError,
        UnsupportedMediaTypeError,
    )
}

# The class of an answer that is not a problem document of a known kind
# (a proxy's page, an older or newer server), by its status.
_BY_STATUS: Dict[int, Type[APIError]] = {
    400: BadRequestError,
    401: UnauthorizedError,
    403: ForbiddenError,
    404: NotFoundError,
    405: MethodNotAllowedError,
    409: ConflictError,
    410: CanceledError,
    413: TooLargeError,
    415: UnsupportedMediaTypeError,
    422: ValidationError,
    429: TooManyRequestsError,
    500: InternalError,
    502: UpstreamError,
    503: UnavailableError,
    504: UnavailableError,
}


def error_from_answer(status: int, body: bytes, retry_after: Optional[float] = None) -> APIError:
    """Returns the error of an error answer: the class of its problem's
    ``type``, else of its status (a 502 or 504 without a problem document,
    a proxy's, is :class:`UnavailableError`, as the Go SDK classifies it)."""
    problem: Dict[str, Any] = {}
    try:
        doc = json.loads(body.decode("utf-8")) if body else None
        if isinstance(doc, dict) and isinstance(doc.get("status"), int):
            problem = doc
    except (ValueError, UnicodeDecodeError):
        pass
    typ = str(problem.get("type", ""))
    cls: Optional[Type[APIError]] = None
    if typ.startswith(PROBLEM_BASE):
        cls = PROBLEM_KINDS.get(typ[len(PROBLEM_BASE):])
    if cls is None:
        if not problem:
            text = body[:4096].decode("utf-8", "replace").strip()
            problem = {"status": status, "detail": text}
            if status in (502, 504):
                return UnavailableError(status, problem, retry_after)
        cls = _BY_STATUS.get(status)
        if cls is None:
            cls = InvalidRequestError if 400 <= status < 500 else InternalError
    return cls(status, problem, retry_after)


def is_retryable(exc: BaseException) -> bool:
    """Reports whether the request that failed with ``exc`` may succeed if
    sent again later, unchanged: the server said it is unavailable for now
    (:class:`UnavailableError`; wait ``retry_after``), or the request got no
    answer (:class:`TransportError`). A request that is not idempotent (a
    submit without an idempotency key) may have been carried out when its
    connection broke."""
    return isinstance(exc, (UnavailableError, TransportError))

"""The Python SDK of jobd: submit jobs and follow them (:class:`Client`,
:class:`AsyncClient`), and run remote workers (:class:`Worker`).

Standard library only, Python 3.9+. See docs/python-sdk.md in the jobd
repository for the guide.
"""

from .aclient import AsyncClient
from .client import Client
from .task import SyncTask, Task
from .worker import Worker, WorkerStats
from .errors import (
    APIError,
    BadRequestError,
    BusyError,
    CanceledError,
    ConflictError,
    DuplicateError,
    ForbiddenError,
    IdempotencyMismatchError,
    InternalError,
    InvalidRequestError,
    JobdError,
    LeaseLostError,
    MethodNotAllowedError,
    NotFoundError,
    PendingError,
    ProcessorFailedError,
    ServiceUnavailableError,
    TaskTimeoutError,
    TooLargeError,
    TooManyRequestsError,
    TransportError,
    UnauthorizedError,
    UnavailableError,
    UnsupportedMediaTypeError,
    UpstreamError,
    UpstreamFailedError,
    UpstreamTimeoutError,
    ValidationError,
    WrongStateError,
    is_retryable,
)
from .failures import Cancelled, Permanent, RetryAfter, Throttle
from .handlers import Handlers, QueueConfig, default_handlers, handler
from .models import ClaimedJob, Event, Job, JobPage, JobSpec, LeaseState, Progress, SubmitResult, WorkerCreated

__version__ = "0.1.0"

__all__ = [
    "Worker",
    "WorkerStats",
    "Task",
    "SyncTask",
    "Handlers",
    "QueueConfig",
    "handler",
    "default_handlers",
    "Permanent",
    "RetryAfter",
    "Throttle",
    "Cancelled",
    "AsyncClient",
    "Client",
    "ClaimedJob",
    "Event",
    "Job",
    "JobPage",
    "JobSpec",
    "LeaseState",
    "Progress",
    "SubmitResult",
    "WorkerCreated",
    "APIError",
    "BadRequestError",
    "BusyError",
    "CanceledError",
    "ConflictError",
    "DuplicateError",
    "ForbiddenError",
    "IdempotencyMismatchError",
    "InternalError",
    "InvalidRequestError",
    "JobdError",
    "LeaseLostError",
    "MethodNotAllowedError",
    "NotFoundError",
    "PendingError",
    "ProcessorFailedError",
    "ServiceUnavailableError",
    "TaskTimeoutError",
    "TooLargeError",
    "TooManyRequestsError",
    "TransportError",
    "UnauthorizedError",
    "UnavailableError",
    "UnsupportedMediaTypeError",
    "UpstreamError",
    "UpstreamFailedError",
    "UpstreamTimeoutError",
    "ValidationError",
    "WrongStateError",
    "is_retryable",
]
